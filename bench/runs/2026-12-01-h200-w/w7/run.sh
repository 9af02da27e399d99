#!/bin/bash
# Round w, call 7: tools/bench/mvbw/q6k.cu with the L2-prefetching split-Q6_K rows (q6ks_pf,
# 1, 2, 3, 5 trips ahead) against the engine's, on the down projection and the LM head.
( timeout 300 bash tools/bench/mvbw/run.sh $OUT q6k ) > $OUT/q6k.out 2>&1; echo "q6k rc $?"
grep -E "engine" $OUT/q6k.out
tail -3 $OUT/q6k.out
