#!/bin/bash
# Round l final check (attention laid out by span, DecodeTuning::span_graphs, plus everything
# of r1-r7): parity; decode in long sessions holding few rows by span and by capacity; the
# bench (pp512/2048/8192, tg128 at depths 0, 4096, 32768); decode at depth 131072 with the KV
# bytes against the arithmetic; `muser run`; the serve load.
P=.device/s21
L=bench/runs/2026-11-30-h200-l
source tools/bench/with_model.sh 200
( time timeout 100 $P/cuda_test span /tmp/g30.gguf ) > $OUT/span.log 2>&1; echo "span rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 90 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth131072.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
P1=$(python3 -c "print('The quick brown fox jumps over the lazy dog. ' * 60)")
( time timeout 40 $P/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run.log 2>&1; echo "run rc $?" >> $OUT/rc.txt
$P/muser serve -m /tmp/g30.gguf --device cuda --port 8090 --parallel 8 -c 4096 --quiet > $OUT/serve.log 2>&1 &
SRV=$!
for i in $(seq 120); do python3 -c "import urllib.request; urllib.request.urlopen('http://localhost:8090/health')" 2>/dev/null && break; sleep 0.5; done
for rep in 1 2; do for n in 1 8; do timeout 60 python3 tools/bench/serve_load.py http://localhost:8090 $n 128 20 >> $OUT/load.log 2>&1; echo "load n=$n rc $?" >> $OUT/rc.txt; done; done
kill $SRV; wait $SRV 2>/dev/null
