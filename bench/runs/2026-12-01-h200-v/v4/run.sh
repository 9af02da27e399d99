#!/bin/bash
# v4 (main): tools/bench/mvbw/tmamv.cu, one Q4_K matvec per launch staged through shared memory
# by cp.async.bulk (one block per SM, contiguous row shares) against the engine's one-matrix
# kernel, on the decode step's shapes.
( timeout 300 bash tools/bench/mvbw/run.sh $OUT/mvbw tmamv ) > $OUT/tmamv.log 2>&1; echo "tmamv rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
cat $OUT/tmamv.log | tail -30
