#!/bin/bash
# Round s, s2: the wide merge's one-warp form (attend_merge_gate_q8_w32, WideMerge::threads 32,
# up to 128 splits; not the default in this build): parity (op checks at 1-128 splits, the
# session after the tensor-core attention), then the interleaved A/B (`cuda_test w32`) at
# depths 4096 and 32768. Binaries: .device/s2.
P=.device/s2
source tools/bench/with_model.sh 300
( time timeout 150 $P/cuda_test w32 /tmp/g30.gguf 4096 32768 ) > $OUT/w32.log 2>&1; echo "w32 rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|wide merge 32|mid_hd128.*(f16|cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-200 | tail -14
grep -E "round|logits" $OUT/w32.log | cut -c1-120
