#!/bin/bash
# y7: the LM head with each warp's four 4-row units as one stream of columns
# (tools/bench/mvbw/lmflat.cu) against the engine's segment launch.
set -uo pipefail
bash tools/bench/mvbw/run.sh "$OUT" lmflat 2>&1 | tail -30
