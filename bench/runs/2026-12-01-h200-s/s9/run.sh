#!/bin/bash
# Round s, s9: the final check of main's final code: tools/bench/final_check.sh (parity, L2
# prefetch A/B, bench, depth 131072, a long prompt, the serve load). Binaries: .device/s9.
P=.device/s9
bash tools/bench/final_check.sh $P
bash tools/bench/final_summary.sh
