#!/bin/bash
# Round z, call 6: the final check of the round's build (.device/z5/new: Q6_K in 1-unit tiles,
# the LM head in 4 units) with tools/bench/final_check.sh, then its summary; nvidia-smi
# sampled every 100 ms during it (power, clocks, clock-event reasons).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 100 > $OUT/smi.csv 2>&1 &
SMI=$!
bash tools/bench/final_check.sh .device/z5/new
kill $SMI
bash tools/bench/final_summary.sh
