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
P1=$(python3 -c "print('The quick brown fox jumps over the lazy dog. ' * 60)")
( time timeout 60 $P/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run.log 2>&1; echo "run rc $?" >> $OUT/rc.txt
$P/muser serve -m /tmp/g30.gguf --device cuda --port 8090 --parallel 8 -c 4096 --quiet > $OUT/serve.log 2>&1 &
SRV=$!
for i in $(seq 120); do python3 -c "import urllib.request; urllib.request.urlopen('http://localhost:8090/health')" 2>/dev/null && break; sleep 0.5; done
for rep in 1 2; do for n in 1 8; do timeout 150 python3 tools/bench/serve_load.py http://localhost:8090 $n 128 20 >> $OUT/load.log 2>&1; echo "load n=$n rc $?" >> $OUT/rc.txt; done; done
kill $SRV; wait $SRV 2>/dev/null
