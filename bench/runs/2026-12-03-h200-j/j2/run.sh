#!/bin/bash
# Round j, j2: the per-head attention's q loaded before its window (DecodeTuning::attn_q_first,
# off by default; the flips list turns it on): parity while the 30B file is made, then
# `cuda_test qfirst` (interleaved A/B, 4 rounds of 100 tokens) at depths 0, 0 and 32768.
P=.device/j2
source tools/bench/with_model.sh 220
( timeout 200 $P/cuda_test qfirst /tmp/g30.gguf 0 0 32768 ) > $OUT/qfirst.log 2>&1; echo "qfirst rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|folded argmax|embed gather" $OUT/cuda_test.log | cut -c1-220 | tail -14
grep -E "^ab|differ" $OUT/qfirst.log | cut -c1-160
