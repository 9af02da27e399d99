#!/bin/bash
# Round l r4: `muser serve --device cuda` with the decoders' steps started before any is
# collected and ended sessions reused (r3's build, .device/s16, beside it), the same load
# twice per build; in-graph costs at depth 0 after the folded merge; the bench.
P=.device/s17
L=bench/runs/2026-11-30-h200-l
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
serve() { # binary port label
  $1 serve -m /tmp/g30.gguf --device cuda --port $2 --parallel 8 -c 4096 --quiet > $OUT/serve-$3.log 2>&1 &
  SRV=$!
  for i in $(seq 120); do python3 -c "import urllib.request; urllib.request.urlopen('http://localhost:$2/health')" 2>/dev/null && break; sleep 0.5; done
  for rep in 1 2; do for n in 1 4 8; do timeout 150 python3 tools/bench/serve_load.py http://localhost:$2 $n 128 40 >> $OUT/load-$3.log 2>&1; echo "load $3 n=$n rc $?" >> $OUT/rc.txt; done; done
  kill $SRV; wait $SRV 2>/dev/null
}
serve $P/muser 8090 new
serve .device/s16/muser 8091 r3
( time timeout 100 $P/cuda_test omit /tmp/g30.gguf 0 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
