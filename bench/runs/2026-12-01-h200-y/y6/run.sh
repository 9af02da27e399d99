#!/bin/bash
# Round y, call 6: the final check of main after this round (the flat gate/up launch's high
# nibbles in place): tools/bench/final_check.sh, then its summary.
bash tools/bench/final_check.sh .device/y6
bash tools/bench/final_summary.sh
