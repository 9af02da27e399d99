#!/bin/bash
# Round k, call 1: main (790327d + the omit hook) on the device: parity, the bench, depth
# 131072; then each kernel class's in-graph cost (left out of every layer) at depths 0 and 32768.
P=.device/s5
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
B="-n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 $B ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 150 $P/cuda_test omit /tmp/g30.gguf 0 32768 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
( time timeout 60 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
