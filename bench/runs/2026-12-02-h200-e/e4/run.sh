#!/bin/bash
# Round e, e4: the latency-bound launches' prefetching blocks first in their grids
# (DecodeTuning::pf_first, on in this build; e4/branch.patch): parity, `cuda_test pffirst`
# (on against off, interleaved, logits bit for bit) at depths 0 and 32768, the profile labels,
# `muser bench` tg128 at depth 0.
P=.device/e4
source bench/runs/2026-12-02-h200-e/flip.sh pffirst
