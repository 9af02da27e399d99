#!/bin/bash
# Round m, call 7: the per-head folded attention's lanes asking L1 for their K/V rows and the
# gate first (DecodeTuning::attn_l1_prefetch, attend_split_*_mpl): parity, A/B at depth 0.
P=.device/m7
source tools/bench/with_model.sh 200
( time timeout 100 $P/cuda_test prefetch /tmp/g30.gguf 0 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
