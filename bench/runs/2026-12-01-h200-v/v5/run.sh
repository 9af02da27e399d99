#!/bin/bash
# v5 (main + WideMerge::warp_columns, default on): parity (every model and op check, the
# new merge in the session checks), then interleaved A/B of the two wide-merge layouts at
# depths 4,096 and 32,768 (depth 0 has no wide merge), then the kernel profile at 32,768.
P=.device/v5; source tools/bench/with_model.sh 300
( timeout 200 $P/cuda_test wv /tmp/g30.gguf 4096 32768 ) > $OUT/wv.log 2>&1; echo "wv rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|panic" $OUT/cuda_test.log | tail -8
grep -E "merge|wv" $OUT/cuda_test.log | grep -v "^op" | head -20
grep -E "ab depth" $OUT/wv.log
