#!/bin/bash
# Round e, e2: the latency-bound launches' L2-prefetching blocks started late
# (DecodeTuning::pf_delay, branch cuda-pf-delay; default none = main): `cuda_test pfdelay`
# (0, 500, 1000, 2000 SM cycles in both, 1000 in the norm tails or the attention only) at
# depths 0 and 32768, and `pfdelay2` (larger prefetch shares with and without a delay) at 0,
# interleaved. No parity run: the delay changes no value (the
# A/B checks the full-size logits bit for bit).
P=.device/e2
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 240 $P/cuda_test pfdelay /tmp/g30.gguf 0 32768 ) > $OUT/pfdelay.log 2>&1; echo "pfdelay rc $?" >> $OUT/rc.txt
( timeout 240 $P/cuda_test pfdelay2 /tmp/g30.gguf 0 ) > $OUT/pfdelay2.log 2>&1; echo "pfdelay2 rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "^ab|differ" $OUT/pfdelay.log $OUT/pfdelay2.log | cut -c1-160
