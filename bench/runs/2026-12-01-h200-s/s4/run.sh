#!/bin/bash
# Round s, s4: the one-matrix launches (output projection, FFN down) at 1, 2 and 4 warps per
# block (DecodeTuning::one_warps; 4 in this build): parity, the interleaved A/B
# (`cuda_test warps`, bit check of the full-size logits) at depths 0 and 32768.
# Binaries: .device/s4.
P=.device/s4
source tools/bench/with_model.sh 300
( time timeout 200 $P/cuda_test warps /tmp/g30.gguf 0 32768 ) > $OUT/warps.log 2>&1; echo "warps rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|one_warps: 1|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-160 | tail -10
grep -E "round|logits" $OUT/warps.log | cut -c1-120
