#!/bin/bash
# Round d, d1: the token boundary's cost at depth 0: `cuda_test gap` with the new "graph
# replays only" row (the captured graph launched back to back: no parameter upload, no argmax).
P=.device/d1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 200 $P/cuda_test gap /tmp/g30.gguf 0 ) > $OUT/gap.log 2>&1; echo "gap rc $?" >> $OUT/rc.txt
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit --format=csv > $OUT/gpu.txt
grep "gap depth" $OUT/gap.log
