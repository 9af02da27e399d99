#!/bin/bash
# v9 (main + MmaAttn::warp_splits, default on): parity (op checks of the warp-split kernels
# with the warp-column merge; session checks), then interleaved A/B of block against warp
# partials at depths 4,096 and 32,768 (depth 0 takes no tensor-core attention), then the bench.
P=.device/v9; source tools/bench/with_model.sh 300
( timeout 150 $P/cuda_test mw /tmp/g30.gguf 4096 32768 ) > $OUT/mw.log 2>&1; echo "mw rc $?" >> $OUT/rc.txt
( timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|panick" $OUT/cuda_test.log | tail -4
grep -E "attn op: worst|warp splits" $OUT/cuda_test.log | head -8
grep -E "ab depth" $OUT/mw.log
grep -E "tg128|pp512" $OUT/bench.log
