#!/bin/bash
# Round g, g1: the norm weights (norm tails; the Q/K/V/gate epilogue's Q/K norm weights)
# loaded evict-last in L2 (DecodeTuning::l2_keep, off by default in this build) with 0, 8 and
# 16 MiB of L2 set aside for persisting lines: parity (the flip's same-bits check included),
# `cuda_test keep` (interleaved, bit-identity checked) at depths 0 and 32768, the profile
# labels, `muser bench` tg128 at depth 0.
P=.device/g1
source bench/runs/2026-12-02-h200-e/flip.sh keep
