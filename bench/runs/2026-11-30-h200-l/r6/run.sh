#!/bin/bash
# Round l r6: the batched prefill with f16 copies of the layer matrices kept on the device
# (Cuda::keep_prefill_weights, PrefillWeights::Auto). Parity (new check: kept vs per chunk,
# same bits), short prompts kept vs per chunk (pfsmall), the bench (pp512, pp2048, tg128),
# `muser run` with a 1,022-token prompt, the serve load.
P=.device/s19
L=bench/runs/2026-11-30-h200-l
source tools/bench/with_model.sh 200
( time timeout 150 $P/cuda_test pfsmall /tmp/g30.gguf ) > $OUT/pfsmall.log 2>&1; echo "pfsmall rc $?" >> $OUT/rc.txt
( time timeout 150 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048 -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
bash tools/bench/prompt_run.sh $P 60
bash tools/bench/serve_check.sh $P 150 2
