#!/bin/bash
# Round r, r4 (main after the round's changes: f16 tensor-core attention by default, the
# cluster merge removed, the wide merge's prefetching variant off by default): parity, then
# the interleaved A/Bs `cuda_test f16` (hi + lo against f16) and `cuda_test mpf` (the wide
# merge prefetching the output projection) at depths 4096 and 32768. Binaries: .device/r4.
P=.device/r4
source tools/bench/with_model.sh 300
( time timeout 100 $P/cuda_test f16 /tmp/g30.gguf 4096 32768 ) > $OUT/f16.log 2>&1; echo "f16 rc $?" >> $OUT/rc.txt
( time timeout 120 $P/cuda_test mpf /tmp/g30.gguf 0 4096 32768 ) > $OUT/mpf.log 2>&1; echo "mpf rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|output-projection prefetch" $OUT/cuda_test.log | cut -c1-160 | tail -16
grep -E "round|differ" $OUT/f16.log $OUT/mpf.log | cut -c1-140
