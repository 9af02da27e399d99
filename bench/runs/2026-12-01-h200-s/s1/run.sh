#!/bin/bash
# Round s, s1: the gate projection's rows as extra blocks of the tensor-core attention launch
# (DecodeTuning::gate_in_attention, default on in this build): parity, then the interleaved
# A/B (`cuda_test gate`, bit check of the full-size logits at each depth) at 0, 4096, 32768.
# Binaries: .device/s1.
P=.device/s1
source tools/bench/parity_ab.sh gate 150 'gate in the tensor' 0 4096 32768
