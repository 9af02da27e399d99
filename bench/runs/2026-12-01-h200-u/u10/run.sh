#!/bin/bash
# u10 (branch cuda-persist): the attention's K/V rows staged 32 at a time through shared
# memory; the A/B with a plain (not cooperative) launch as well. Parity beside the synthetic
# file's generation; phase times at depths 0 and 4096; the A/B at 0 and 4096.
P=.device/u10
source tools/bench/with_model.sh 300
( timeout 100 $P/cuda_test ptrace /tmp/g30.gguf 0 4096 ) > $OUT/ptrace.log 2>&1; echo "ptrace rc $?" >> $OUT/rc.txt
( timeout 200 $P/cuda_test persist /tmp/g30.gguf 0 4096 ) > $OUT/persist.log 2>&1; echo "persist rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "persist|FAIL|passed" $OUT/cuda_test.log | grep -E "mid|FAIL|passed" | cut -c1-200 | tail -8
cat $OUT/ptrace.log | grep trace
grep -E "persist|graph|logits|profile" $OUT/persist.log | cut -c1-200 | head -40
