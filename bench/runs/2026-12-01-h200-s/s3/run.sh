#!/bin/bash
# Round s, s3: extra blocks of the tensor-core attention launch prefetching the output
# projection into L2 (attend_mma_*_hp, L2Prefetch::o_proj_mma; 0 = off in this build):
# parity, then the interleaved A/B (`cuda_test mmapf`: none, 30, 60, 100 %, bit check of the
# full-size logits at each depth) at depths 4096 and 32768; the in-graph cost of each kernel
# class at depth 4096 (`cuda_test omit`). Binaries: .device/s3.
P=.device/s3
source tools/bench/with_model.sh 300
( time timeout 200 $P/cuda_test mmapf /tmp/g30.gguf 4096 32768 ) > $OUT/mmapf.log 2>&1; echo "mmapf rc $?" >> $OUT/rc.txt
( time timeout 120 $P/cuda_test omit /tmp/g30.gguf 4096 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|prefetched beside|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-200 | tail -10
grep -E "round|logits" $OUT/mmapf.log | cut -c1-120
grep -E "round 1" $OUT/omit.log | cut -c1-120
