#!/bin/bash
# Round e, e1: the post-norm tails with their row sums from the one-matrix launches before
# them (DecodeTuning::norm_partials, on in this build; branch cuda-norm-partials): parity,
# `cuda_test nx` (on against off, interleaved) at depths 0 and 32768, the profile labels,
# `muser bench` tg128 at depth 0.
P=.device/e1
source bench/runs/2026-12-02-h200-e/flip.sh nx
