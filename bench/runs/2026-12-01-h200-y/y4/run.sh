#!/bin/bash
# Round y, y4: the high nibbles taken in place (y3) in the flat gate/up launch only
# (q4k_term<true>; the other kernels' PTX unchanged). Parity of the new build; logits digests of
# both builds (.device/y3/base: main before, .device/y4: after) at depths 0, 4096, 32768;
# decode at depths 0 and 32768 with the two builds in turn, twice.
P=.device/y4
source tools/bench/with_model.sh 300
for b in y3/base y4; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_${b//\//_}.log 2>&1; done
for i in 1 2; do for b in y3/base y4; do echo "== $b" >> $OUT/depth.log; ( timeout 80 .device/$b/cuda_test depth /tmp/g30.gguf 0 32768 ) >> $OUT/depth.log 2>&1; done; done
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|KL" $OUT/cuda_test.log | grep -E "FAIL|passed|worst|mid_hd128" | cut -c1-170 | tail -8
diff <(grep -i digest $OUT/digest_y3_base.log) <(grep -i digest $OUT/digest_y4.log) && echo "digests equal"; grep -i digest $OUT/digest_y4.log | head -3
grep -E "^== |^decode at.*norm_one_sum true" $OUT/depth.log | cut -c1-90
