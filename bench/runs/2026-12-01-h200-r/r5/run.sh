#!/bin/bash
# Round r, r5: the tensor-core attention issuing its first chunk copies before loading Q and
# computing each head row's warp weights once in its epilogue (the same bits). Parity of the
# new build; logits digests of both builds (r4: before, r5: after) at depths 0, 4096, 32768;
# decode at depths 4096 and 32768 with the two builds in turn, twice; then the new build's
# bench. Binaries: .device/r4 (old), .device/r5 (new).
P=.device/r5
source tools/bench/with_model.sh 300
for b in r4 r5; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
for i in 1 2; do for b in r4 r5; do echo "== $b" >> $OUT/depth.log; ( timeout 60 .device/$b/cuda_test depth /tmp/g30.gguf 4096 32768 ) >> $OUT/depth.log 2>&1; done; done
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|KL" $OUT/cuda_test.log | grep -E "FAIL|passed|worst|mid_hd128" | cut -c1-170 | tail -14
diff <(grep -i digest $OUT/digest_r4.log) <(grep -i digest $OUT/digest_r5.log) && echo "digests equal"; grep -i digest $OUT/digest_r5.log | head -3
grep -E "^== |^decode at|attend_mma" $OUT/depth.log | cut -c1-110
grep -vE "^\s*$" $OUT/bench.log | tail -12
