#!/bin/bash
# Round t, t6: the sliding rings' K/V rows partly evict-last in L2 (DecodeTuning::kv_keep:
# 30, 60, 100 % of the rows; the rest evict-first as before): the interleaved A/B with the
# full-size logits' bit check (`cuda_test keep`) at depths 4096 and 32768.
# Binaries: .device/t6.
P=.device/t6
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 200 $P/cuda_test keep /tmp/g30.gguf 4096 32768 ) > $OUT/keep.log 2>&1; echo "keep rc $?"
grep -E "round|logits" $OUT/keep.log | cut -c1-120
