#!/bin/bash
# Round e, e3: the post-norm tails after the one-matrix launches as programmatic dependent
# launches (DecodeTuning::pdl_tails, on in this build; branch cuda-pdl-tail): the output and
# down projections trigger at their blocks' ends, the tail's prefetching blocks start at once,
# its norm blocks wait. Parity, `cuda_test pdlt` (on against off, interleaved, logits bit for
# bit) at depths 0 and 32768, the profile labels, `muser bench` tg128 at depth 0.
P=.device/e3
source bench/runs/2026-12-02-h200-e/flip.sh pdlt
