#!/bin/bash
# Round z, z9: the FFN gate/up matrices as the gate/up streams in whole tiles
# (DecodeTuning::gate_up_streams: each matrix laid out as the flat gate/up launch's warps read
# it, constant offsets, the trip that crosses from gate into up padded; mvq_gu_swiglu_flat_gs),
# and the round's final check on that build in the same call (device time): parity of the new
# build (.device/z9); logits digests of it and of z5's (.device/z9/prev) at depths 0, 4096,
# 32768; `cuda_test streams` (default against the streams flipped, interleaved, the full-size
# logits compared) at depths 0 and 32768; ilv.cu (the engine's streams kernel against the
# file layout, the 1-unit tiles, one fused buffer); then tools/bench/final_check.sh's steps
# after its parity (the L2 prefetch A/B, the bench, depth 131072, the long prompt, the serve
# load) and its summary.
P=.device/z9
source tools/bench/with_model.sh 300
for b in prev new; do d=.device/z9; [ $b = prev ] && d=.device/z9/prev; ( timeout 60 $d/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
( timeout 150 $P/cuda_test streams /tmp/g30.gguf 0 32768 ) > $OUT/streams.log 2>&1
( timeout 90 bash tools/bench/mvbw/run.sh $OUT/mvbw ilv ) > $OUT/ilv.log 2>&1
( time timeout 100 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 90 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth131072.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
bash tools/bench/prompt_run.sh $P 40
bash tools/bench/serve_check.sh $P 60 2
rm -rf $OUT/mvbw/ilv
diff <(grep -i digest $OUT/digest_prev.log) <(grep -i digest $OUT/digest_new.log) > /dev/null && echo "digests equal"
grep -E "ab depth|differ" $OUT/streams.log | cut -c1-100
grep -E "gate/up" $OUT/ilv.log | tail -6
grep -E "streams" $OUT/cuda_test.log | cut -c1-150 | tail -3
bash tools/bench/final_summary.sh
