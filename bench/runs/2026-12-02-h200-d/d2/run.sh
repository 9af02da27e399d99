#!/bin/bash
# Round d, d2: greedy_fed with the steps' parameters uploaded once for the run (the argmax
# launch copies each into place) and the embedding gather folded into the entry norm
# (DecodeTuning::fold_embed): parity, the fold's bits and A/B, `cuda_test gap`, and `muser
# bench` tg128 at depth 0 against d1's build (main before the round) in turn.
P=.device/d2
source tools/bench/with_model.sh 200
( timeout 150 $P/cuda_test embed /tmp/g30.gguf 0 ) > $OUT/embed.log 2>&1; echo "embed rc $?" >> $OUT/rc.txt
( timeout 100 $P/cuda_test gap /tmp/g30.gguf 0 ) > $OUT/gap.log 2>&1; echo "gap rc $?" >> $OUT/rc.txt
for r in 1 2; do
  for b in d1 d2; do
    echo "== $b round $r" >> $OUT/bench.log
    ( timeout 60 .device/$b/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --bandwidth 4280 ) >> $OUT/bench.log 2>&1
  done
done
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|tensor-core|greedy fed" $OUT/cuda_test.log | cut -c1-170 | tail -14
grep -E "differ|^ab" $OUT/embed.log
grep "gap depth" $OUT/gap.log
grep -E "==|tg128" $OUT/bench.log
