#!/bin/bash
# Round c, c2: c1's label check found no fold on mid_hd128, suspected to be the residency
# check (it was not: that model's n_ff is below its Q width, so `act_ff` cannot hold the
# int8 row; the 30B did fold in c1). This build prints the residency (blocks the device holds
# at once against the launch's) and can fold relying on index-order starts alone
# (`fold_attn_in_order`): parity with that flip, then `cuda_test fattn` at depth 0.
P=.device/c2
source tools/bench/with_model.sh 200
source bench/runs/2026-12-02-h200-c/fattn.sh
