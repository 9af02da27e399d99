#!/bin/bash
# v7: the final check of main after round v (the warp-column wide merge):
# tools/bench/final_check.sh (parity, L2 prefetch A/B, bench, depth 131072, a long prompt, the
# serve load) and its summary. Binaries: .device/v7.
P=.device/v7
bash tools/bench/final_check.sh $P
bash tools/bench/final_summary.sh
