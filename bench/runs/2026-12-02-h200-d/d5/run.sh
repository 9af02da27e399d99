#!/bin/bash
# Round d, d5: the per-head attention's K rows loaded whole by lane groups
# (DecodeTuning::attn_k_coalesced, on in this build): parity, `cuda_test kc` (on against off)
# at depths 0 and 200, and `muser bench` tg128 at depth 0 against d1's build (main before the
# round) in turn.
P=.device/d5
source tools/bench/with_model.sh 200
( timeout 200 $P/cuda_test kc /tmp/g30.gguf 0 200 ) > $OUT/kc.log 2>&1; echo "kc rc $?" >> $OUT/rc.txt
for r in 1 2; do
  for b in d1 d5; do
    echo "== $b round $r" >> $OUT/bench.log
    ( timeout 60 .device/$b/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --bandwidth 4280 ) >> $OUT/bench.log 2>&1
  done
done
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|tensor-core|greedy fed" $OUT/cuda_test.log | cut -c1-170 | tail -8
grep -E "^ab" $OUT/kc.log
grep -E "==|tg128" $OUT/bench.log
