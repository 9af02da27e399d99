#!/bin/bash
# Round u: the staged persistent token (tools/bench/mvbw/stage.cu) against chain.cu's plain graph;
# then ncu on the staged kernel's 52-layer launch (its third launch: 1, 2, 52 layers).
set -uo pipefail
timeout 300 bash tools/bench/mvbw/run.sh "$OUT" stage > "$OUT/stage.out" 2>&1
echo "rc $?" >> "$OUT/stage.out"
NCU=$(which ncu || echo /usr/local/cuda/bin/ncu)
S="--section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis"
( timeout 200 $NCU --clock-control none $S -k regex:stage --launch-skip 2 --launch-count 1 "$OUT/stage" ncu ) > "$OUT/ncu.txt" 2>&1
echo "ncu rc $?" >> "$OUT/ncu.txt"
tail -32 "$OUT/stage.out"
