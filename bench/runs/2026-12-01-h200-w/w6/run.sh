#!/bin/bash
# Round w, call 6: the final check of main (MmaAttn::max_splits_long 192 by default), then
# the bench's tg alone in a fresh process (does the prefill before it change the tg rates?).
bash tools/bench/final_check.sh .device/w6
( timeout 120 .device/w6/muser bench -m /tmp/g30.gguf --device cuda -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench_tg.log 2>&1; echo "bench tg rc $?" >> $OUT/rc.txt
bash tools/bench/final_summary.sh
grep -vE "^\s*$" $OUT/bench_tg.log | tail -5
