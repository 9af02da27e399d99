#!/bin/bash
# Round s, s1: the gate projection's rows as extra blocks of the tensor-core attention launch
# (DecodeTuning::gate_in_attention, default on in this build): parity, then the interleaved
# A/B (`cuda_test gate`, bit check of the full-size logits at each depth) at 0, 4096, 32768.
# Binaries: .device/s1.
P=.device/s1
source tools/bench/with_model.sh 300
( time timeout 150 $P/cuda_test gate /tmp/g30.gguf 0 4096 32768 ) > $OUT/gate.log 2>&1; echo "gate rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|gate in the tensor|mid_hd128.*(f16|cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-200 | tail -12
grep -E "round|logits" $OUT/gate.log | cut -c1-120
