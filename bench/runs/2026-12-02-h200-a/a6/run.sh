#!/bin/bash
# Round a, a6: the pushes' code shared after a5 (norm_cluster.cu's push_all and block_sum4,
# common.cuh's relaxed-barrier halves; the PTX of the norm tails changed, the same operations):
# parity of the new build (.device/a6/new), the logits digests at depths 0, 4096, 32768 of a5's
# build (.device/a6/base) and of the new one, and `cuda_test rate` of each at depth 0.
P=.device/a6/new
source tools/bench/with_model.sh 300
for b in base new; do ( timeout 60 .device/a6/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
for b in base new; do echo "== $b" >> $OUT/rate.log; ( timeout 60 .device/a6/$b/cuda_test rate /tmp/g30.gguf 0 ) >> $OUT/rate.log 2>&1; done
cat $OUT/rc.txt
grep -E "FAIL|passed" $OUT/cuda_test.log | tail -3 | cut -c1-200
diff <(grep -i digest $OUT/digest_base.log) <(grep -i digest $OUT/digest_new.log) > /dev/null && echo "digests new = base"
grep -E "^== |ab depth" $OUT/rate.log | cut -c1-90
