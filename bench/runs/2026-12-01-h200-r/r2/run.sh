#!/bin/bash
# Round r, r2: r1 (f16-only products and the cluster-merged tensor-core attention) with the
# cluster merge reading the other blocks' partials as plain loads of mapped addresses and
# the partials sized for whole clusters: parity, then `cuda_test mmar` at depths 4096, 32768.
# Binaries: .device/r2.
P=.device/r2
source tools/bench/with_model.sh 300
( time timeout 200 $P/cuda_test mmar /tmp/g30.gguf 4096 32768 ) > $OUT/mmar.log 2>&1; echo "mmar rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst" $OUT/cuda_test.log | tail -12
grep -E "f16|cluster" $OUT/cuda_test.log | grep -E "session|on .* layers" | cut -c1-150 | head -30
grep "round" $OUT/mmar.log | cut -c1-120
