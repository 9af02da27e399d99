#!/bin/bash
# Round w, call 1: round v's pending check of `MmaAttn::max_splits_long` (parity, whose op
# checks now cover 1,024-row splits; `cuda_test long` at 32,768 and 131,072, its fourth
# variant the cap of 192 splits), then tools/bench/mvbw/forkffn.cu (the FFN in pieces on
# parallel graph branches). Binaries: main's `muser` and `cuda_test` in .device/next.
P=.device/next; source tools/bench/with_model.sh 150
( timeout 220 $P/cuda_test long /tmp/g30.gguf 32768 131072 ) > $OUT/long.log 2>&1; echo "long rc $?" >> $OUT/rc.txt
( timeout 150 bash tools/bench/mvbw/run.sh $OUT forkffn ) > $OUT/forkffn.out 2>&1; echo "forkffn rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|panick" $OUT/cuda_test.log | tail -3
grep -E "rows 1024" $OUT/cuda_test.log | cut -c1-200 | head -4
grep -E "ab depth|depth" $OUT/long.log | tail -12
tail -30 $OUT/forkffn.out
