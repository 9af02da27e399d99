#!/bin/bash
# Round j, j1: the greedy argmax folded into the LM head (DecodeTuning::fold_argmax): parity
# while the 30B file is made, `cuda_test fedab` (greedy_fed with the fold on and off,
# interleaved) at depths 0 and 32768, then `muser bench` tg128 at depths 0, 4096 and 32768.
P=.device/j1
source tools/bench/with_model.sh 220
( timeout 150 $P/cuda_test fedab /tmp/g30.gguf 0 32768 ) > $OUT/fedab.log 2>&1; echo "fedab rc $?" >> $OUT/rc.txt
( timeout 150 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|greedy fed|folded argmax|embed gather" $OUT/cuda_test.log | cut -c1-220 | tail -30
grep -E "^fedab" $OUT/fedab.log
grep tg128 $OUT/bench.log
