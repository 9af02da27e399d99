#!/bin/bash
# Round z, z8: the FFN gate/up matrices as the gate/up streams (DecodeTuning::gate_up_streams:
# each matrix laid out as the flat gate/up launch's warps read it, mvq_gu_swiglu_flat_gs).
# Parity of the new build (.device/z8); logits digests of it and of z5's (.device/z8/prev) at
# depths 0, 4096, 32768; `cuda_test streams` (default against the streams flipped, interleaved,
# the full-size logits compared) at depths 0 and 32768; the per-kernel profile at depth 0; then
# ilv.cu (the engine's streams kernel against the file layout, the 1-unit tiles, one buffer).
P=.device/z8
source tools/bench/with_model.sh 300
for b in prev new; do d=.device/z8; [ $b = prev ] && d=.device/z8/prev; ( timeout 60 $d/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
( timeout 150 $P/cuda_test streams /tmp/g30.gguf 0 32768 ) > $OUT/streams.log 2>&1
( timeout 60 $P/cuda_test depth /tmp/g30.gguf 0 ) > $OUT/depth.log 2>&1
( timeout 90 bash tools/bench/mvbw/run.sh $OUT/mvbw ilv ) > $OUT/ilv.log 2>&1
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE|streams" $OUT/cuda_test.log | cut -c1-170 | tail -14
diff <(grep -i digest $OUT/digest_prev.log) <(grep -i digest $OUT/digest_new.log) > /dev/null && echo "digests equal"; grep -i digest $OUT/digest_new.log | head -3
grep -E "ab depth|differ" $OUT/streams.log | cut -c1-100
grep -E "^profile mv ffn_gate|^decode at depth 0, fold_swiglu true norm_one_sum true" $OUT/depth.log | cut -c1-150 | head -4
grep -E "gate/up" $OUT/ilv.log | tail -12
