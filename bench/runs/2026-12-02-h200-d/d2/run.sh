#!/bin/bash
# Round d, d2: greedy_fed with the steps' parameters uploaded once for the run (the argmax
# launch copies each into place) and the embedding gather folded into the entry norm
# (DecodeTuning::fold_embed): parity, the fold's bits and A/B, `cuda_test gap`, and `muser
# bench` tg128 at depth 0 against d1's build (main before the round) in turn.
P=.device/d2
source tools/bench/with_model.sh 200
( timeout 150 $P/cuda_test embed /tmp/g30.gguf 0 ) > $OUT/embed.log 2>&1; echo "embed rc $?" >> $OUT/rc.txt
( timeout 100 $P/cuda_test gap /tmp/g30.gguf 0 ) > $OUT/gap.log 2>&1; echo "gap rc $?" >> $OUT/rc.txt
source bench/runs/2026-12-02-h200-d/inturn.sh 14
grep -E "differ|^ab" $OUT/embed.log
grep "gap depth" $OUT/gap.log
grep -E "==|tg128" $OUT/bench.log
