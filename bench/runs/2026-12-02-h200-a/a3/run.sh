#!/bin/bash
# Round a, a3: the cluster exchanges by pushes (common.cuh's push_*: st.async into every
# block's shared memory counted on its mbarrier, relaxed cluster barriers) in the post-norm
# tails (norm_tail_q8_cl1 mode 2) and the folded QK-norm of the Q/K/V/gate launch (seg_qkv),
# instead of release/acquire cluster barriers (MEMBAR.ALL.GPU + L1 invalidation) and remote
# loads. Parity of the new build (.device/a3/new); logits digests of main (.device/a3/base) and
# of the new build (twice) at depths 0, 4096, 32768; `cuda_test rate` with the two builds in
# turn, twice, at depths 0 and 32768; the per-kernel profile of each at depth 0.
# The argument: the folder of the two builds (default .device/a3; a4 ran it on .device/a4).
D=${1:-.device/a3}
P=$D/new
source tools/bench/with_model.sh 300
for b in base new new2; do d=$D/${b%2}; ( timeout 60 $d/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
for i in 1 2; do for b in base new; do echo "== $b" >> $OUT/rate.log; ( timeout 60 $D/$b/cuda_test rate /tmp/g30.gguf 0 32768 ) >> $OUT/rate.log 2>&1; done; done
for b in base new; do echo "== $b" >> $OUT/depth.log; ( timeout 60 $D/$b/cuda_test depth /tmp/g30.gguf 0 ) >> $OUT/depth.log 2>&1; done
cat $OUT/rc.txt
grep -E "FAIL|passed" $OUT/cuda_test.log | tail -4 | cut -c1-200
for b in new new2; do diff <(grep -i digest $OUT/digest_base.log) <(grep -i digest $OUT/digest_$b.log) > /dev/null && echo "digests $b = base"; done
grep -E "^== |ab depth" $OUT/rate.log | cut -c1-90
grep -E "^== |norm_tail_cl1|attn_q" $OUT/depth.log | cut -c1-150
