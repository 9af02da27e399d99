#!/bin/bash
# Round o, o5: one-matrix launches without the segment dispatch (DecodeTuning::one_matrix,
# mvq_one_q4k_lb5 / mvq_one_q6ks_lb4): parity (same bits flipped, applies on every layer),
# the interleaved A/B with the full-size bit check at depth 0. Binaries: .device/o5.
P=.device/o5
source tools/bench/with_model.sh 260
( time timeout 240 $P/cuda_test one /tmp/g30.gguf 0 32768 ) > $OUT/one.log 2>&1; echo "one rc $?" >> $OUT/rc.txt
