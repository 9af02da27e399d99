#!/bin/bash
# Round 7: programmatic dependent launch (griddepcontrol) + L2 prefetch of each matvec block's rows.
P=.device/perf
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
timeout 90 $P/cuda_test > $OUT/cuda_test.log 2>&1
echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
timeout 90 $P/cuda_test /tmp/g30.gguf 32768 > $OUT/session.log 2>&1
echo "session rc $?" >> $OUT/rc.txt
timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -r 5 --bandwidth 4280 > $OUT/bench.log 2>&1
echo "bench rc $?" >> $OUT/rc.txt
