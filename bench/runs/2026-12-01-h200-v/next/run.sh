#!/bin/bash
# Not run yet (round v ran out of device time): the check that `MmaAttn::max_splits_long` needs
# before it becomes the default. Parity (its op checks now include 1,024-row splits of the
# tensor-core attention), then `cuda_test long` at depths 32,768 and 131,072 (fourth variant:
# the cap of 192 splits). Binaries: main's `muser` and `cuda_test` in .device/next.
P=.device/next; source tools/bench/with_model.sh 120
( timeout 200 $P/cuda_test long /tmp/g30.gguf 32768 131072 ) > $OUT/long.log 2>&1; echo "long rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|panick" $OUT/cuda_test.log | tail -3
grep -E "rows 1024" $OUT/cuda_test.log | cut -c1-200 | head -4
grep -E "ab depth" $OUT/long.log
