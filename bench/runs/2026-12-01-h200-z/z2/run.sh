#!/bin/bash
# Round z, z2: Q6_K's split layout regrouped so that every load instruction of a warp reads
# 512 contiguous bytes (common.cuh; z1's "tiled"). Parity of the new build; logits digests of
# both builds (.device/z2/base: main before, .device/z2/new: after) at depths 0, 4096, 32768;
# decode at depths 0 and 32768 with the two builds in turn, twice; then ilv.cu again (its Q6_K
# part now the engine's kernel against the layout before).
P=.device/z2/new
source tools/bench/with_model.sh 300
for b in base new; do ( timeout 60 .device/z2/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
for i in 1 2; do for b in base new; do echo "== $b" >> $OUT/depth.log; ( timeout 80 .device/z2/$b/cuda_test depth /tmp/g30.gguf 0 32768 ) >> $OUT/depth.log 2>&1; done; done
( timeout 60 bash tools/bench/mvbw/run.sh $OUT/mvbw ilv ) > $OUT/ilv.log 2>&1
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|KL" $OUT/cuda_test.log | grep -E "FAIL|passed|worst|mid_hd128" | cut -c1-170 | tail -8
diff <(grep -i digest $OUT/digest_base.log) <(grep -i digest $OUT/digest_new.log) && echo "digests equal"; grep -i digest $OUT/digest_new.log | head -3
grep -E "^== |^decode at.*norm_one_sum true" $OUT/depth.log | cut -c1-90
grep -E "Q6_K|check" $OUT/ilv.log | tail -8
