#!/bin/bash
# Round n, n2: the gate/up launch as one stream of columns per warp (DecodeTuning::gate_up_flat,
# mvq_gu_swiglu_flat): parity, the interleaved A/B (full-size bit check at depth 0), the bench.
# Binaries: .device/n2.
P=.device/n2
source tools/bench/with_model.sh 200
( time timeout 120 $P/cuda_test flat /tmp/g30.gguf 0 32768 ) > $OUT/flat.log 2>&1; echo "flat rc $?" >> $OUT/rc.txt
( time timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
