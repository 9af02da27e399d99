#!/bin/bash
# Round w, call 3: the FFN in pieces on parallel graph branches (DecodeTuning::ffn_pieces, off
# by default in this build) and MmaAttn::max_splits_long 192 as the default. Parity (with the
# pieces' session checks at 2, 4, 8 pieces where they divide), then `cuda_test pieces` at
# depths 0, 4,096 and 32,768 (1, 2, 3, 6 pieces, interleaved).
P=.device/w3; source tools/bench/with_model.sh 200
( timeout 300 $P/cuda_test pieces /tmp/g30.gguf 0 4096 32768 ) > $OUT/pieces.log 2>&1; echo "pieces rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|panick" $OUT/cuda_test.log | tail -5
grep -E "ffn_pieces" $OUT/cuda_test.log | grep mid | head -8
grep -E "ab depth|differ" $OUT/pieces.log | tail -48
