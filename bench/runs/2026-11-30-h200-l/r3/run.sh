#!/bin/bash
# Round l r3: parity with the one-split direct merge, the fold A/B at depth 0, the bench,
# `muser serve --device cuda` under concurrent load (this build: one whole-token session per
# sequence; main before it: the batched host graph with GPU products), `muser run`.
P=.device/s16
L=bench/runs/2026-11-30-h200-l
source tools/bench/with_model.sh 200
( time timeout 100 $P/cuda_test fold /tmp/g30.gguf 0 ) > $OUT/fold.log 2>&1; echo "fold rc $?" >> $OUT/rc.txt
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
serve() { # binary port label
  $1 serve -m /tmp/g30.gguf --device cuda --port $2 --parallel 8 -c 4096 --quiet > $OUT/serve-$3.log 2>&1 &
  SRV=$!
  for i in $(seq 120); do curl -sf localhost:$2/health >/dev/null 2>&1 && break; python3 -c "import urllib.request,sys; urllib.request.urlopen('http://localhost:$2/health')" 2>/dev/null && break; sleep 0.5; done
  for n in 1 4 8; do timeout 150 python3 tools/bench/serve_load.py http://localhost:$2 $n $4 40 >> $OUT/load-$3.log 2>&1; echo "load $3 n=$n rc $?" >> $OUT/rc.txt; done
  kill $SRV; wait $SRV 2>/dev/null
}
serve $P/muser 8090 new 128
serve .device/final-k3/muser 8091 main 16
P1=$(python3 -c "print('The quick brown fox jumps over the lazy dog. ' * 60)")
( time timeout 60 $P/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run.log 2>&1; echo "run rc $?" >> $OUT/rc.txt
