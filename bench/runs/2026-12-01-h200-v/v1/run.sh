#!/bin/bash
# v1 (branch cuda-persist): the persistent kernel's producer prefetching tiles into L2 ahead
# of its shared-memory ring (Persist::l2_ahead), A/B against the graph at depths 0 and 4,096,
# then the phase times with and without the lookahead; then main's refactored chain.cu and
# stage.cu rebuilt with nvcc and run (round u's review refactors, never built there).
P=.device/v1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 300 $P/cuda_test persist /tmp/g30.gguf 0 4096 ) > $OUT/persist.log 2>&1; echo "persist rc $?" >> $OUT/rc.txt
( timeout 90 $P/cuda_test ptrace /tmp/g30.gguf 0 ) > $OUT/ptrace.log 2>&1; echo "ptrace rc $?" >> $OUT/rc.txt
( timeout 150 bash tools/bench/mvbw_main/run.sh $OUT/mvbw stage chain ) > $OUT/mvbw.log 2>&1; echo "mvbw rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "ab depth|full-size|trace.*per layer" $OUT/persist.log $OUT/ptrace.log
grep -E "ms|FAIL|error" $OUT/mvbw.log | tail -30
