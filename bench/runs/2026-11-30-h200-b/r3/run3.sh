#!/bin/bash
# Round 3: register-resident norm tail, 32-rows-per-warp attention, lb5 default.
P=.device/perf
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
timeout 200 $P/cuda_test > $OUT/cuda_test.log 2>&1
echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
timeout 200 $P/cuda_test /tmp/g30.gguf 4096 32768 131072 > $OUT/session.log 2>&1
echo "session rc $?" >> $OUT/rc.txt
timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -r 5 --bandwidth 4280 > $OUT/bench.log 2>&1
echo "bench rc $?" >> $OUT/rc.txt
