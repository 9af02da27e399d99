#!/bin/bash
# Round y, y8: the LM head through the flat kernel (mvq_flat_q6ks_lb4, DecodeTuning::lm_flat).
# Parity of the new build; logits digests against y6 (main before) at depths 0, 4096, 32768;
# cuda_test lmflat (interleaved A/B, the flip checked bit for bit) at depths 0 and 32768; the
# bench's tg128 at depths 0, 4096, 32768.
P=.device/y8
source tools/bench/with_model.sh 300
for b in y6 y8; do ( timeout 60 .device/$b/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
( timeout 150 $P/cuda_test lmflat /tmp/g30.gguf 0 32768 ) > $OUT/lmflat.log 2>&1; echo "lmflat rc $?" >> $OUT/rc.txt
( timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|mid_hd128|LM head flat" $OUT/cuda_test.log | cut -c1-170 | tail -14
diff <(grep -i digest $OUT/digest_y6.log) <(grep -i digest $OUT/digest_y8.log) && echo "digests equal"
grep -vE "^profile" $OUT/lmflat.log | cut -c1-150 | tail -24
grep -E "tg128|pp" $OUT/bench.log
