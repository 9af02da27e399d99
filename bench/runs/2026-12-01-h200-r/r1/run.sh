#!/bin/bash
# Round r, r1: the tensor-core attention with f16-only products and/or the split-K merge
# folded in through thread-block clusters: parity (op and session checks of the new
# variants), then the interleaved A/B (`cuda_test mmar`) at depths 4096 and 32768.
# Binaries: .device/r1 (or the folder given: r2 runs this script with .device/r2).
P=${1:-.device/r1}
source tools/bench/with_model.sh 300
( time timeout 200 $P/cuda_test mmar /tmp/g30.gguf 4096 32768 ) > $OUT/mmar.log 2>&1; echo "mmar rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst" $OUT/cuda_test.log | tail -12
grep -E "f16|cluster" $OUT/cuda_test.log | grep -E "session|on .* layers" | cut -c1-150 | head -30
grep "round" $OUT/mmar.log | cut -c1-120
