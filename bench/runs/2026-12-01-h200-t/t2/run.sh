#!/bin/bash
# Round t, t2: the per-kernel profile (event-timed, no graph) of the default and of the fused
# merge + output projection (2 heads x 512 rows) at depth 4096 (`cuda_test moprof`).
# Binaries: .device/t2.
P=.device/t2
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 200 $P/cuda_test moprof /tmp/g30.gguf 4096 ) > $OUT/moprof.log 2>&1; echo "moprof rc $?"
grep -E "==|profile" $OUT/moprof.log | cut -c1-150
