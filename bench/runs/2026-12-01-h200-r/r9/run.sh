#!/bin/bash
# Round r, r9: after the review (the tensor-core attention's Q fragments through one function
# shared with the prefill's: the same PTX up to register numbering): parity, logits digests of
# r8 and r9 at depths 0, 4096, 32768, decode at depths 4096 and 32768 with the two builds in
# turn, twice. Binaries: .device/r8, .device/r9.
P=.device/r9
source tools/bench/with_model.sh 300
for b in r8 r9; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
for i in 1 2; do for b in r8 r9; do echo "== $b" >> $OUT/depth.log; ( timeout 60 .device/$b/cuda_test depth /tmp/g30.gguf 4096 32768 ) >> $OUT/depth.log 2>&1; done; done
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-170 | tail -8
diff <(grep -i digest $OUT/digest_r8.log) <(grep -i digest $OUT/digest_r9.log) && echo "digests r8 = r9"
grep -E "^== |^decode at" $OUT/depth.log | grep -E "^==|norm_one_sum true" | cut -c1-80
