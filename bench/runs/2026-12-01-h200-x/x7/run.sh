#!/bin/bash
# Round x, call 7: the final check of main after this round (the tail prefetch of the down
# projection by default): tools/bench/final_check.sh, then its summary.
bash tools/bench/final_check.sh .device/x7
bash tools/bench/final_summary.sh
