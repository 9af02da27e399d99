#!/bin/bash
# Round l r7: the tensor-core prefill attention (pf_attend_mma_*, DecodeTuning::prefill_mma).
# Parity (every prefill check now runs it; one case per model keeps pf_attend_g), long
# prompts with it on and off (pflong), the bench (pp512, pp2048, pp8192, tg128), `muser run`.
P=.device/s20
source tools/bench/with_model.sh 200
( time timeout 150 $P/cuda_test pflong /tmp/g30.gguf ) > $OUT/pflong.log 2>&1; echo "pflong rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0 -r 3 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
P1=$(python3 -c "print('The quick brown fox jumps over the lazy dog. ' * 60)")
( time timeout 60 $P/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run.log 2>&1; echo "run rc $?" >> $OUT/rc.txt
( time timeout 60 .device/s19/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run-r6.log 2>&1; echo "run r6 rc $?" >> $OUT/rc.txt
