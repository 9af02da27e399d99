#!/bin/bash
# The summary of a final check (tools/bench/final_check.sh) from its logs in $OUT: the return
# codes, parity's totals and bars, the bench table, the depth-131072 decode with its KV bytes,
# the long prompt, the serve load.
#   bash tools/bench/final_summary.sh
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|argmax|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-160 | tail -9
grep -vE "^\s*$" $OUT/bench.log | tail -9 | head -7
grep -E "KV cache|^decode at" $OUT/depth131072.log | cut -c1-110 | head -3
grep -E "^prompt" $OUT/run.log | cut -c1-140
grep -E "clients" $OUT/load.log | tail -4 | cut -c1-120
