#!/bin/bash
# Round e, e1: the post-norm tails with their row sums from the one-matrix launches before
# them (DecodeTuning::norm_partials, on in this build; branch cuda-norm-partials): parity,
# `cuda_test nx` (on against off, interleaved) at depths 0 and 32768, the profile labels,
# `muser bench` tg128 at depth 0.
P=.device/e1
source tools/bench/with_model.sh 200
( timeout 200 $P/cuda_test nx /tmp/g30.gguf 0 32768 ) > $OUT/nx.log 2>&1; echo "nx rc $?" >> $OUT/rc.txt
( timeout 60 $P/cuda_test depth /tmp/g30.gguf 0 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
( timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|tensor-core|greedy fed" $OUT/cuda_test.log | cut -c1-170 | tail -24
grep -E "^ab|tok/s" $OUT/nx.log | cut -c1-200
grep -E "profile (mv attn_output|mv ffn_down|norm_tail)" $OUT/depth.log | head -6
grep tg128 $OUT/bench.log
