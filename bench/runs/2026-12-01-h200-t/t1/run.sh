#!/bin/bash
# Round t, t1: the split-K merge and the output projection as one launch
# (DecodeTuning::merge_oproj, kernels/merge_oproj.cu; off in this build): parity (its op checks
# and session checks included), then the interleaved A/B of the three compiled pairs against
# the separate launches (`cuda_test mo`) at depths 4096 and 32768.
# Binaries: .device/t1.
P=.device/t1
source tools/bench/parity_ab.sh mo 200 'merge_oproj' 4096 32768
