#!/bin/bash
# Round m, call 3: L2 prefetch by extra blocks of the latency-bound launches (norm tails,
# per-head folded attention; DecodeTuning::l2_prefetch, kernels/prefetch.cu): parity (bits
# with it on), the A/B at depths 0 and 32768. Binaries: .device/m3.
P=.device/m3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 200 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
