#!/bin/bash
# Round o, o1: the deferred-norm step (DecodeTuning::dual_norm, kernels/dual.cu): parity
# (its oracle-bar, repeatability and applies checks on every parity model), then the full-size
# comparison, profiles and interleaved A/B against the plain step. Binaries: .device/o1.
P=.device/o1
source tools/bench/with_model.sh 260
( time timeout 240 $P/cuda_test dual /tmp/g30.gguf 0 32768 ) > $OUT/dual.log 2>&1; echo "dual rc $?" >> $OUT/rc.txt
