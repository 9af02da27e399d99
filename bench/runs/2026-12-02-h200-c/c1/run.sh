#!/bin/bash
# Round c (2026-12-02), c1: the attention of short caches folded into the Q/K/V/gate launch
# (DecodeTuning::fold_attn, off by default in this build): parity (its bit-identity flip and
# label check among them), then `cuda_test fattn` at depth 0 (default against the fold, alone
# and with the output projection prefetched by the Q/K/V/gate launch; full-size logits of the
# fold compared bit for bit).
P=.device/c1
source tools/bench/with_model.sh 200
( time timeout 150 $P/cuda_test fattn /tmp/g30.gguf 0 ) > $OUT/fattn_0.log 2>&1; echo "fattn rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|attention folded|greedy fed" $OUT/cuda_test.log | cut -c1-170 | tail -20
cat $OUT/fattn_0.log | grep -v "^$" | tail -22
