#!/bin/bash
# Round s, s5: the final check of main (one_warps 1 by default): tools/bench/final_check.sh
# (parity, L2 prefetch A/B, bench, depth 131072, a long prompt, the serve load), and the
# one-matrix warps A/B at depth 4096. Binaries: .device/s5.
P=.device/s5
bash tools/bench/final_check.sh $P
( time timeout 100 $P/cuda_test warps /tmp/g30.gguf 4096 ) > $OUT/warps.log 2>&1; echo "warps rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-160 | tail -8
grep -vE "^\s*$" $OUT/bench.log | tail -9 | head -7
grep -E "KV cache|^decode at" $OUT/depth131072.log | cut -c1-110 | head -3
grep -E "round" $OUT/warps.log | cut -c1-100
grep -E "clients|tok/s" $OUT/load.log 2>/dev/null | tail -6 | cut -c1-160
