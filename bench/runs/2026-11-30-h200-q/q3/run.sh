#!/bin/bash
# Round q, q3 (branch cuda-ffn-df): the fused FFN, second version (32-row gate/up tasks, tickets held in registers, the down tasks waiting per warp after their first weight loads) (DecodeTuning::ffn_fused): parity (its bits
# against the split down projection, the oracle's bar), then the interleaved A/B against the
# separate launches with the full-size bit check against the split down projection at depth 0.
# Binaries: .device/q3.
P=.device/q3
source tools/bench/with_model.sh 300
grep -E "fused|FAIL|passed" $OUT/cuda_test.log | head -40
( time timeout 200 $P/cuda_test ffn /tmp/g30.gguf 0 32768 ) > $OUT/ffn.log 2>&1; echo "ffn rc $?" >> $OUT/rc.txt
