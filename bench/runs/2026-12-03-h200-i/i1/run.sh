#!/bin/bash
# Round i, i1: the Q/K/V/gate launch's last, partial loop trip prefetched into L2 beside the
# norm tail before it (L2Prefetch::qkvg_tail, off in this build): parity (the flips list turns
# it on), `cuda_test triptail` at depths 0 and 32768 (twice at 0), the profile labels.
P=.device/i1
source tools/bench/with_model.sh 200
( timeout 150 $P/cuda_test triptail /tmp/g30.gguf 0 32768 ) > $OUT/triptail1.log 2>&1; echo "triptail1 rc $?" >> $OUT/rc.txt
( timeout 100 $P/cuda_test triptail /tmp/g30.gguf 0 ) > $OUT/triptail2.log 2>&1; echo "triptail2 rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|mid_hd128.*(session KL)" $OUT/cuda_test.log | cut -c1-170 | tail -6
grep -E "^ab|differ" $OUT/triptail*.log | cut -c1-160
