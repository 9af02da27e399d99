#!/bin/bash
# Round s, s4: the one-matrix launches (output projection, FFN down) at 1, 2 and 4 warps per
# block (DecodeTuning::one_warps; 4 in this build): parity, the interleaved A/B
# (`cuda_test warps`, bit check of the full-size logits) at depths 0 and 32768.
# Binaries: .device/s4.
P=.device/s4
source tools/bench/parity_ab.sh warps 200 'one_warps: 1' 0 32768
