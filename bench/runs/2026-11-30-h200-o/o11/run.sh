#!/bin/bash
# Round o, o11: the final code after review (the same kernels' SASS as o10): parity, the
# one-matrix A/B through flag_ab, and every microbenchmark built with nvcc (barrier run).
# Binaries: .device/o11.
P=.device/o11
source tools/bench/with_model.sh 260
( time timeout 120 $P/cuda_test one /tmp/g30.gguf 0 ) > $OUT/one.log 2>&1; echo "one rc $?" >> $OUT/rc.txt
export PATH=$PATH:/usr/local/cuda/bin
for b in mvbw chain q6k barrier; do
    nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/$b tools/bench/mvbw/$b.cu > $OUT/build-$b.log 2>&1; echo "build $b rc $?" >> $OUT/rc.txt
done
timeout 60 /tmp/barrier > $OUT/barrier.log 2>&1; echo "barrier rc $?" >> $OUT/rc.txt
