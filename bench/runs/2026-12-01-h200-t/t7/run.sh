#!/bin/bash
# Round t, t7: the final check of main after round t (the Q6_K change): tools/bench/final_check.sh (parity, L2
# prefetch A/B, bench, depth 131072, a long prompt, the serve load). Binaries: .device/t7.
P=.device/t7
bash tools/bench/final_check.sh $P
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|argmax|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-160 | tail -9
grep -vE "^\s*$" $OUT/bench.log | tail -9 | head -7
grep -E "KV cache|^decode at" $OUT/depth131072.log | cut -c1-110 | head -3
grep -E "^prompt" $OUT/run.log | cut -c1-140
grep -E "clients" $OUT/load.log | tail -4 | cut -c1-120
