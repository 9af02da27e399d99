#!/bin/bash
# Round e, e5: e4's build with the parity checks taught the `_mpf` labels and pf_first's
# flip (bit for bit): parity, `cuda_test pffirst` twice at depth 0 and once at 32768, the
# profile labels, `muser bench` tg128 at depth 0.
P=.device/e5
source tools/bench/with_model.sh 200
for r in 1 2; do
  ( timeout 100 $P/cuda_test pffirst /tmp/g30.gguf 0 ) >> $OUT/pffirst.log 2>&1; echo "pffirst $r rc $?" >> $OUT/rc.txt
done
( timeout 100 $P/cuda_test pffirst /tmp/g30.gguf 32768 ) >> $OUT/pffirst.log 2>&1; echo "pffirst 32768 rc $?" >> $OUT/rc.txt
( timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,32768 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|tensor-core attention:|pf_first" $OUT/cuda_test.log | cut -c1-170 | tail -12
grep -E "^ab|differ" $OUT/pffirst.log | cut -c1-160
grep tg128 $OUT/bench.log
