#!/bin/bash
# Round 2 (h200-f, final): parity, then the bench, on the final binaries. Logs under $OUT.
P=.device/fold
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 70 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 35 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|folded" $OUT/cuda_test.log | tail -10
tail -7 $OUT/bench.log
