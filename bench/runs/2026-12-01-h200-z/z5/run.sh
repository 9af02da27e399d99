#!/bin/bash
# Round z, z5: the LM head in the split layout in 4 units (common.cuh's q6s_part_u: a flat
# warp's 16 rows one stream, its loop trip one tile). Parity of the new build; logits digests
# of three builds (.device/z5/base: main before round z, z2: the 1-unit tiles of z2, new: z2 +
# the LM head in 4 units) at depths 0, 4096, 32768; `cuda_test rate` at depths 0 and 32768
# with the three builds in turn, twice; the per-kernel profile of each at depth 0; then
# lmflat.cu (the flat kernel on the 4-unit and the 1-unit layouts, the segment kernel, a
# plain read).
P=.device/z5/new
source tools/bench/with_model.sh 300
for b in base z2 new; do ( timeout 60 .device/z5/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
for i in 1 2; do for b in base z2 new; do echo "== $b" >> $OUT/rate.log; ( timeout 60 .device/z5/$b/cuda_test rate /tmp/g30.gguf 0 32768 ) >> $OUT/rate.log 2>&1; done; done
for b in base z2 new; do echo "== $b" >> $OUT/depth.log; ( timeout 60 .device/z5/$b/cuda_test depth /tmp/g30.gguf 0 ) >> $OUT/depth.log 2>&1; done
( timeout 90 bash tools/bench/mvbw/run.sh $OUT/mvbw lmflat ) > $OUT/lmflat.log 2>&1
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|flat kernel" $OUT/cuda_test.log | grep -E "FAIL|passed|worst NMSE|flat kernel|mid_hd128" | cut -c1-170 | tail -8
for b in z2 new; do diff <(grep -i digest $OUT/digest_base.log) <(grep -i digest $OUT/digest_$b.log) > /dev/null && echo "digests $b = base"; done; grep -i digest $OUT/digest_new.log | head -3
grep -E "^== |ab depth" $OUT/rate.log | cut -c1-90
grep -E "^== |mv output" $OUT/depth.log | cut -c1-150
grep -E "round|differ" $OUT/lmflat.log | tail -14
