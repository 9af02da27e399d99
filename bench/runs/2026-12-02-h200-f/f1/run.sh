#!/bin/bash
# Round f, f1: the post-attention norm tail folded into the FFN gate/up launch
# (DecodeTuning::norm_gate_up, off by default in this build): parity (the new same-bits
# checks included), `cuda_test normgu` (apart against folded with 0, 1, 2, 4 tiles
# prefetched, interleaved, bit-identity checked) at depths 0 and 32768, the profile labels,
# `muser bench` tg128 at depth 0.
P=.device/f1
source bench/runs/2026-12-02-h200-e/flip.sh normgu
