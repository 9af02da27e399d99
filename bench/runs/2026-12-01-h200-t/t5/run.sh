#!/bin/bash
# Round t, t5: the split-layout Q6_K rows (FFN down of the "more bits" layers, the LM head)
# without __vsub4: Σ q·a − 32 Σ a (the same bits). Parity of the new build; logits digests of
# both builds (.device/t5/base: main before, .device/t5: after) at depths 0, 4096, 32768;
# decode at depths 0 and 32768 with the two builds in turn, twice (with profiles).
P=.device/t5
source tools/bench/with_model.sh 300
for b in t5/base t5; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_${b//\//_}.log 2>&1; done
for i in 1 2; do for b in t5/base t5; do echo "== $b" >> $OUT/depth.log; ( timeout 80 .device/$b/cuda_test depth /tmp/g30.gguf 0 32768 ) >> $OUT/depth.log 2>&1; done; done
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|KL" $OUT/cuda_test.log | grep -E "FAIL|passed|worst|mid_hd128" | cut -c1-170 | tail -8
diff <(grep -i digest $OUT/digest_t5_base.log) <(grep -i digest $OUT/digest_t5.log) && echo "digests equal"; grep -i digest $OUT/digest_t5.log | head -3
grep -E "^== |^decode at.*norm_one_sum true|profile mv (ffn_down Q6_K|output)" $OUT/depth.log | cut -c1-150
