#!/bin/bash
# z1: the Q4_K decode matvecs over re-laid weights (tools/bench/mvbw/ilv.cu): file layout,
# 4-row interleave, tiled; DRAM-cold.
set -uo pipefail
bash tools/bench/mvbw/run.sh "$OUT" ilv 2>&1 | tail -60
