#!/bin/bash
# Round z, z7: tools/bench/mvbw/ilv.cu with the FFN gate and up matrices as one buffer of
# flat-warp streams (q4k_gu_stream: each loop trip of a flat warp one 4,608-byte tile) against
# the file layout and the 1-unit tiles; DRAM-cold.
set -uo pipefail
bash tools/bench/mvbw/run.sh "$OUT" ilv 2>&1 | grep -E "check|gate/up" | tail -20
