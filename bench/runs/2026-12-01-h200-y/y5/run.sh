#!/bin/bash
# Round y, y3: the Q4_K rows' high nibbles taken in place (dp4a.u32.s32 on q & 0xF0F0F0F0, the
# sum shifted back once per row: the same bits) instead of a shift per word. Parity of the new
# build; logits digests of both builds (.device/y3/base: main before, .device/y3/us: after) at
# depths 0, 4096, 32768; decode at depths 0 and 32768 with the two builds in turn, twice.
P=.device/y5
source tools/bench/with_model.sh 300
for b in y3/base y5; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_${b//\//_}.log 2>&1; done
for i in 1 2; do for b in y4 y5; do echo "== $b" >> $OUT/depth.log; ( timeout 80 .device/$b/cuda_test depth /tmp/g30.gguf 0 32768 ) >> $OUT/depth.log 2>&1; done; done
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|KL" $OUT/cuda_test.log | grep -E "FAIL|passed|worst|mid_hd128" | cut -c1-170 | tail -8
diff <(grep -i digest $OUT/digest_y3_base.log) <(grep -i digest $OUT/digest_y5.log) && echo "digests equal"; grep -i digest $OUT/digest_y5.log | head -3
grep -E "^== |^decode at.*norm_one_sum true" $OUT/depth.log | cut -c1-90
