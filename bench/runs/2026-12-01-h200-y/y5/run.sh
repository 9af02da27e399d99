#!/bin/bash
# Round y, y5: y4, and the flat gate/up loop keeping its column without a division per trip
# and unpacking the scales without a branch on the lane quarter (the same values). Parity of
# the new build; logits digests against main before (.device/y3/base) at depths 0, 4096,
# 32768; decode at depths 0 and 32768 with y4 and y5 in turn, twice.
P=.device/y5
source tools/bench/with_model.sh 300
for b in y3/base y5; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_${b//\//_}.log 2>&1; done
for i in 1 2; do for b in y4 y5; do echo "== $b" >> $OUT/depth.log; ( timeout 80 .device/$b/cuda_test depth /tmp/g30.gguf 0 32768 ) >> $OUT/depth.log 2>&1; done; done
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|KL" $OUT/cuda_test.log | grep -E "FAIL|passed|worst|mid_hd128" | cut -c1-170 | tail -8
diff <(grep -i digest $OUT/digest_y3_base.log) <(grep -i digest $OUT/digest_y5.log) && echo "digests equal"; grep -i digest $OUT/digest_y5.log | head -3
grep -E "^== |^decode at.*norm_one_sum true" $OUT/depth.log | cut -c1-90
