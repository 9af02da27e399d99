#!/bin/bash
# Round q, q4 (branch cuda-ffn-df): the fused FFN, third version (q3 with the warp mask of the wait fixed, relaxed polling 128 ns apart, slice counts 128 bytes apart, Q6_K layers at 4 blocks per SM) (DecodeTuning::ffn_fused): parity (its bits
# against the split down projection, the oracle's bar), then the interleaved A/B against the
# separate launches with the full-size bit check against the split down projection at depth 0.
# Binaries: .device/q4.
P=.device/q4
source tools/bench/with_model.sh 300
grep -E "fused|FAIL|passed" $OUT/cuda_test.log | head -40
( time timeout 200 $P/cuda_test ffn /tmp/g30.gguf 0 32768 ) > $OUT/ffn.log 2>&1; echo "ffn rc $?" >> $OUT/rc.txt
