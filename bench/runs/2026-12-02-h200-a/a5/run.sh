#!/bin/bash
# Round a, a5: the final check on main after round a (e75c3b1: the cluster exchanges by
# pushes), tools/bench/final_check.sh's steps (parity, the L2 prefetch A/B, the bench, decode
# at depth 131072 with the KV bytes, the long prompt, the serve load), then the L2 prefetch
# re-swept at depth 0 (pfsweep, appended to prefetch.log) and the summary.
P=.device/a5
bash tools/bench/final_check.sh $P
( time timeout 100 $P/cuda_test pfsweep /tmp/g30.gguf 0 ) >> $OUT/prefetch.log 2>&1; echo "pfsweep rc $?" >> $OUT/rc.txt
bash tools/bench/final_summary.sh
