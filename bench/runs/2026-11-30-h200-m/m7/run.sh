#!/bin/bash
# Round m, call 7: the per-head folded attention's lanes asking L1 for their K/V rows and the
# gate first (DecodeTuning::attn_l1_prefetch, attend_split_*_mpl): parity, A/B at depth 0.
P=.device/m7
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 100 $P/cuda_test prefetch /tmp/g30.gguf 0 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
