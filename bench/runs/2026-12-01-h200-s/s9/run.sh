#!/bin/bash
# Round s, s9: the final check of main's final code: tools/bench/final_check.sh (parity, L2
# prefetch A/B, bench, depth 131072, a long prompt, the serve load). Binaries: .device/s9.
P=.device/s9
bash tools/bench/final_check.sh $P
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|argmax|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-160 | tail -9
grep -vE "^\s*$" $OUT/bench.log | tail -9 | head -7
grep -E "KV cache|^decode at" $OUT/depth131072.log | cut -c1-110 | head -3
grep -E "^prompt" $OUT/run.log | cut -c1-140
grep -E "clients" $OUT/load.log | tail -4 | cut -c1-120
