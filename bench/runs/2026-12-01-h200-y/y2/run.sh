#!/bin/bash
# y2: the norm tails folded into the next matvec's launch (tools/bench/mvbw/normfold.cu).
set -uo pipefail
bash tools/bench/mvbw/run.sh "$OUT" normfold 2>&1 | tail -40
