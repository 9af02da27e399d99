#!/bin/bash
# Round w, call 10: the final check of main after this round (L2Prefetch::qkvg 20 by default,
# MmaAttn::max_splits_long 192): tools/bench/final_check.sh, then its summary.
bash tools/bench/final_check.sh .device/w10
bash tools/bench/final_summary.sh
