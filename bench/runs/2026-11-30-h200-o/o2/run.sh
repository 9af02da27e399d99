#!/bin/bash
# Round o, o2: the deferred-norm step, consumers with the norm scalars first (one sum per row, four activation phases) (DecodeTuning::dual_norm, kernels/dual.cu): parity
# (its oracle-bar, repeatability and applies checks on every parity model), then the full-size
# comparison, profiles and interleaved A/B against the plain step. Binaries: .device/o2.
P=.device/o2
source tools/bench/with_model.sh 260
( time timeout 240 $P/cuda_test dual /tmp/g30.gguf 0 32768 ) > $OUT/dual.log 2>&1; echo "dual rc $?" >> $OUT/rc.txt
