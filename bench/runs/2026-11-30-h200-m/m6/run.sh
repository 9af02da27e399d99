#!/bin/bash
# Round m, final check: the L2 prefetch on by default (16 extra blocks; 30 / 60 / 6 %), the
# folded merge's per-head kernels with shared split weights again. Binaries: .device/m6.
bash tools/bench/final_check.sh .device/m6
