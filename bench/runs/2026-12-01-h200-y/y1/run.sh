#!/bin/bash
# y1: the FFN as one launch (tools/bench/mvbw/ffnfuse.cu) against the engine's two launches.
set -uo pipefail
bash tools/bench/mvbw/run.sh "$OUT" ffnfuse 2>&1 | tail -40
