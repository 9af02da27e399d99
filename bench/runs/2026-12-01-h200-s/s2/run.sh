#!/bin/bash
# Round s, s2: the wide merge's one-warp form (attend_merge_gate_q8_w32, WideMerge::threads 32,
# up to 128 splits; not the default in this build): parity (op checks at 1-128 splits, the
# session after the tensor-core attention), then the interleaved A/B (`cuda_test w32`) at
# depths 4096 and 32768. Binaries: .device/s2.
P=.device/s2
source tools/bench/parity_ab.sh w32 150 'wide merge 32' 4096 32768
