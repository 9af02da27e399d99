#!/bin/bash
# Round q, q5 (branch cuda-rows2): the one-matrix launches (output projection, FFN down) with
# two rows per warp at 7 blocks per SM (DecodeTuning::one_rows2): parity (the flip in the
# same-bits checks), then the interleaved A/B with the full-size bit check at depth 0.
# Binaries: .device/q5.
P=.device/q5
source tools/bench/with_model.sh 300
( time timeout 150 $P/cuda_test rows2 /tmp/g30.gguf 0 32768 ) > $OUT/rows2.log 2>&1; echo "rows2 rc $?" >> $OUT/rc.txt
