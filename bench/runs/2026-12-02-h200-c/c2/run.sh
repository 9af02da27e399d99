#!/bin/bash
# Round c, c2: c1's fold did not apply on the head_dim-128 models (the residency check
# refused it). This build prints the residency (blocks the device holds at once against the
# launch's) and can fold relying on index-order starts alone (`fold_attn_in_order`): parity
# with that flip, then `cuda_test fattn` at depth 0.
P=.device/c2
source tools/bench/with_model.sh 200
( time timeout 150 $P/cuda_test fattn /tmp/g30.gguf 0 ) > $OUT/fattn_0.log 2>&1; echo "fattn rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|attention folded" $OUT/cuda_test.log | cut -c1-200 | tail -14
cat $OUT/fattn_0.log | grep -v "^$" | tail -22
