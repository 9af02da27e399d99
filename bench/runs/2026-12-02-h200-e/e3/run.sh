#!/bin/bash
# Round e, e3: the post-norm tails after the one-matrix launches as programmatic dependent
# launches (DecodeTuning::pdl_tails, on in this build; branch cuda-pdl-tail): the output and
# down projections trigger at their blocks' ends, the tail's prefetching blocks start at once,
# its norm blocks wait. Parity, `cuda_test pdlt` (on against off, interleaved, logits bit for
# bit) at depths 0 and 32768, the profile labels, `muser bench` tg128 at depth 0.
P=.device/e3
source tools/bench/with_model.sh 200
( timeout 200 $P/cuda_test pdlt /tmp/g30.gguf 0 32768 ) > $OUT/pdlt.log 2>&1; echo "pdlt rc $?" >> $OUT/rc.txt
( timeout 60 $P/cuda_test depth /tmp/g30.gguf 0 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
( timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-170 | tail -16
grep -E "^ab|differ" $OUT/pdlt.log | cut -c1-160
grep -E "profile (mv attn_output|mv ffn_down|norm_tail)" $OUT/depth.log | head -6
grep tg128 $OUT/bench.log
