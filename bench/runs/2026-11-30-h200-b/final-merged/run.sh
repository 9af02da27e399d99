#!/bin/bash
# Final check of the merged main (scheduler + cuda-perf): parity, batched invariance, tg128.
P=.device/final
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
$P/muser synth --preset tiny --out /tmp/tiny.gguf -q > /dev/null 2>&1
timeout 200 $P/cuda_test > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
timeout 60 $P/batch_decode /tmp/tiny.gguf 1,8 64 cuda > $OUT/batch_tiny_cuda.log 2>&1; echo "batch rc $?" >> $OUT/rc.txt
wait $SYN
timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -r 5 --bandwidth 4280 > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
