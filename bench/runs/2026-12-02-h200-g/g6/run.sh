#!/bin/bash
# Round g, g6: main after the round (engine as c3121e7): parity and `muser bench` tg128 at
# depth 0 (tools/bench/parity_tg.sh), then tg128 at depths 4096 and 32768.
P=.device/g6
source tools/bench/parity_tg.sh
( timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 4096,32768 -r 5 --bandwidth 4280 ) > $OUT/bench_depth.log 2>&1; echo "bench depth rc $?" >> $OUT/rc.txt
grep tg128 $OUT/bench_depth.log; tail -1 $OUT/rc.txt
