#!/bin/bash
# Check of main after merging cuda-att (and cuda-mv's record): parity, the bench interleaved with
# cuda-mv-tail's binary (tail/, based on main before cuda-att: compare at depth 0 only), pp512,
# and decode at depth 131,072 with the KV memory arithmetic.
P=.device/final3
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
source tools/bench/with_model.sh 200
B="-n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 $B ) > $OUT/bench-main-1.log 2>&1; echo "bench main 1 rc $?" >> $OUT/rc.txt
( time timeout 90 $P/tail/muser bench -m /tmp/g30.gguf --device cuda -p 0 $B ) > $OUT/bench-tail-1.log 2>&1; echo "bench tail 1 rc $?" >> $OUT/rc.txt
( time timeout 90 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 $B ) > $OUT/bench-main-2.log 2>&1; echo "bench main 2 rc $?" >> $OUT/rc.txt
( time timeout 90 $P/tail/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench-tail-2.log 2>&1; echo "bench tail 2 rc $?" >> $OUT/rc.txt
( time timeout 90 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
