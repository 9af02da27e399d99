#!/bin/bash
# Round g, g3: the per-head attention of one-split layers and the output projection as one
# launch (DecodeTuning::attn_oproj, off by default in this build), its projection blocks
# prefetching 0-100 % of their rows before they wait: parity (the flip's same-bits check and
# the label check included), `cuda_test aoproj` (interleaved, bit-identity checked) at depths 0
# and 32768, the profile labels, `muser bench` tg128 at depth 0.
P=.device/g3
source bench/runs/2026-12-02-h200-e/flip.sh aoproj
grep -E "attention \+ output projection|attn_oproj" $OUT/cuda_test.log | cut -c1-160 | head -12
