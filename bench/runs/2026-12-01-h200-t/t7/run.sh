#!/bin/bash
# Round t, t7: the final check of main after round t (the Q6_K change):
# tools/bench/final_check.sh (parity, L2 prefetch A/B, bench, depth 131072, a long prompt, the
# serve load) and its summary. Binaries: .device/t7.
P=.device/t7
bash tools/bench/final_check.sh $P
bash tools/bench/final_summary.sh
