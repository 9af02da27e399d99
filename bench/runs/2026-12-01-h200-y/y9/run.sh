#!/bin/bash
# Round y, call 9: the final check of main after this round (the flat gate/up launch's high
# nibbles in place, the LM head through the flat kernel): tools/bench/final_check.sh on y8's
# build, then its summary.
bash tools/bench/final_check.sh .device/y8
bash tools/bench/final_summary.sh
