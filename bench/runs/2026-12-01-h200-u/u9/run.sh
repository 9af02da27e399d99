#!/bin/bash
# u9 (branch cuda-persist): 3 slots of 60 KB (16-row tiles), V rows 4 at a time.
# Parity beside the synthetic file's generation; phase times at depths 0 and 4096; the A/B.
P=.device/u9
source tools/bench/with_model.sh 300
( timeout 100 $P/cuda_test ptrace /tmp/g30.gguf 0 4096 ) > $OUT/ptrace.log 2>&1; echo "ptrace rc $?" >> $OUT/rc.txt
( timeout 120 $P/cuda_test persist /tmp/g30.gguf 0 ) > $OUT/persist.log 2>&1; echo "persist rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "persist|FAIL|passed" $OUT/cuda_test.log | grep -E "mid|FAIL|passed" | cut -c1-200 | tail -8
cat $OUT/ptrace.log | grep trace
grep -E "persist|graph|logits" $OUT/persist.log | cut -c1-200 | head -12
