#!/bin/bash
# Round c (2026-12-02), c1: the attention of short caches folded into the Q/K/V/gate launch
# (DecodeTuning::fold_attn, off by default in this build): parity (its bit-identity flip and
# label check among them), then `cuda_test fattn` at depth 0 (default against the fold, alone
# and with the output projection prefetched by the Q/K/V/gate launch; full-size logits of the
# fold compared bit for bit).
P=.device/c1
source tools/bench/with_model.sh 200
source bench/runs/2026-12-02-h200-c/fattn.sh
