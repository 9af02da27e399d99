#!/bin/bash
# Round l r1: the split-K merge folded into the attention launch (DecodeTuning::fold_merge):
# parity (op bit-identity at 1-1,024 splits, session bit-identity at 1 and 5 splits), the
# interleaved A/B at depths 0 and 32768, the bench.
P=.device/s15
source tools/bench/with_model.sh 200
( time timeout 200 $P/cuda_test fold /tmp/g30.gguf 0 32768 ) > $OUT/fold.log 2>&1; echo "fold rc $?" >> $OUT/rc.txt
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
