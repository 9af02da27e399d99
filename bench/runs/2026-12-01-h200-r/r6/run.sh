#!/bin/bash
# Round r, r6: the wide merge issuing its loads first and the per-head attention loading q
# before the window (the same bits). Parity of the new build; logits digests of r5 and r6 at
# depths 0, 4096, 32768; decode at depths 0, 4096 and 32768 with the two builds in turn,
# twice; the new build's bench. Binaries: .device/r5 (before), .device/r6 (after).
P=.device/r6
source tools/bench/with_model.sh 300
for b in r5 r6; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
for i in 1 2; do for b in r5 r6; do echo "== $b" >> $OUT/depth.log; ( timeout 80 .device/$b/cuda_test depth /tmp/g30.gguf 0 4096 32768 ) >> $OUT/depth.log 2>&1; done; done
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst" $OUT/cuda_test.log | cut -c1-170 | tail -8
diff <(grep -i digest $OUT/digest_r5.log) <(grep -i digest $OUT/digest_r6.log) && echo "digests equal"
grep -E "^== |^decode at" $OUT/depth.log | grep -E "^==|norm_one_sum true" | cut -c1-80
grep -E "attend_split_128_mpl|attend_merge_gate_q8_w " $OUT/depth.log | cut -c1-110
grep -vE "^\s*$" $OUT/bench.log | tail -9
