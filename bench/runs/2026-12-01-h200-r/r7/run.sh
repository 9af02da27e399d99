#!/bin/bash
# Round r, r7: the round's final code (r5's engine plus r6's wide-merge loads): the final
# check (parity, prefetch A/B, bench, depth 131072, a prompt run, the serve load), then
# logits digests of r5 and r7 at depths 0, 4096 and 32768 (the same bits expected).
# Binaries: .device/r7 (final), .device/r5.
bash tools/bench/final_check.sh .device/r7
for b in r5 r7; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|mid_hd128.*(KL|KV)" $OUT/cuda_test.log | cut -c1-170 | tail -12
diff <(grep -i digest $OUT/digest_r5.log) <(grep -i digest $OUT/digest_r7.log) && echo "digests r5 = r7"
grep -E "round" $OUT/prefetch.log | cut -c1-100
grep -vE "^\s*$" $OUT/bench.log | tail -9 | head -7
grep -E "KV cache|^decode at" $OUT/depth131072.log | cut -c1-120 | head -3
tail -3 $OUT/run.log; tail -6 $OUT/load.log
