#!/bin/bash
# Round k, call 2: the post-norm tails folded into their consumers (fold_norm): parity, the
# full-size bit check and the interleaved A/B (with split_rows_long 256 / 1024 at depth), the
# bench.
P=.device/s6
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 200 $P/cuda_test nf /tmp/g30.gguf 0 32768 ) > $OUT/nf.log 2>&1; echo "nf rc $?" >> $OUT/rc.txt
B="-n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 $B ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
