#!/bin/bash
# Round h, h3: the per-head attention's speculative L1 prefetch of an unwrapped window's rows
# before it reads the window (DecodeTuning::attn_l1_spec, off in this build): parity (the
# flips list turns it on), `cuda_test l1spec` at depth 0 (twice: K only, K + V, against none),
# the profile labels.
P=.device/h3
source tools/bench/with_model.sh 200
for i in 1 2; do
( timeout 150 $P/cuda_test l1spec /tmp/g30.gguf 0 ) > $OUT/l1spec$i.log 2>&1; echo "l1spec$i rc $?" >> $OUT/rc.txt
done
cat $OUT/rc.txt
grep -E "FAIL|passed|mid_hd128.*(session KL)" $OUT/cuda_test.log | cut -c1-170 | tail -6
grep -E "^ab|differ" $OUT/l1spec*.log | cut -c1-160
