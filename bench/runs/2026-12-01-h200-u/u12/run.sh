#!/bin/bash
# u12 (branch cuda-persist): every layer's descriptor copied into shared memory at the start
# (the producer read it from global memory at every phase, behind the weight stream). Parity
# beside the synthetic file's generation; phase times at depth 0; the A/B at depth 0.
P=.device/u12
source tools/bench/with_model.sh 300
( timeout 100 $P/cuda_test ptrace /tmp/g30.gguf 0 ) > $OUT/ptrace.log 2>&1; echo "ptrace rc $?" >> $OUT/rc.txt
( timeout 120 $P/cuda_test persist /tmp/g30.gguf 0 ) > $OUT/persist.log 2>&1; echo "persist rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "persist|FAIL|passed" $OUT/cuda_test.log | grep -E "mid|FAIL|passed" | cut -c1-200 | tail -4
cat $OUT/ptrace.log | grep trace
grep -E "decode_persist|full-size|ab depth" $OUT/persist.log | cut -c1-150
