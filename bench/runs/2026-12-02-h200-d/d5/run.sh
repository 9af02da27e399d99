#!/bin/bash
# Round d, d5: the per-head attention's K rows loaded whole by lane groups
# (DecodeTuning::attn_k_coalesced, on in this build): parity, `cuda_test kc` (on against off)
# at depths 0 and 200, and `muser bench` tg128 at depth 0 against d1's build (main before the
# round) in turn.
P=.device/d5
source tools/bench/with_model.sh 200
( timeout 200 $P/cuda_test kc /tmp/g30.gguf 0 200 ) > $OUT/kc.log 2>&1; echo "kc rc $?" >> $OUT/rc.txt
source bench/runs/2026-12-02-h200-d/inturn.sh 8
grep -E "^ab" $OUT/kc.log
grep -E "==|tg128" $OUT/bench.log
