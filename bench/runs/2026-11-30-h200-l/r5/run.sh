#!/bin/bash
# Round l r5: r4's serve build fixed (the pinned logits' copy waited on through an event of
# our own: event tracking is off for the session's context, so the pinned slice's event was
# never recorded and finish_step read the previous step's logits). Parity (with the new check:
# steps started on two sessions before collecting = step's bits), then the serve load (prompts
# of 20 words, so every prompt is one chunk and request i's text must be the same whatever
# the number of clients), this build and r3's, twice each.
P=.device/s18
L=bench/runs/2026-11-30-h200-l
source tools/bench/with_model.sh 200
serve() { # binary port label
  $1 serve -m /tmp/g30.gguf --device cuda --port $2 --parallel 8 -c 4096 --quiet > $OUT/serve-$3.log 2>&1 &
  SRV=$!
  for i in $(seq 120); do python3 -c "import urllib.request; urllib.request.urlopen('http://localhost:$2/health')" 2>/dev/null && break; sleep 0.5; done
  for rep in 1 2; do for n in 1 4 8; do timeout 150 python3 tools/bench/serve_load.py http://localhost:$2 $n 128 20 >> $OUT/load-$3.log 2>&1; echo "load $3 n=$n rc $?" >> $OUT/rc.txt; done; done
  kill $SRV; wait $SRV 2>/dev/null
}
serve $P/muser 8090 new
serve .device/s16/muser 8091 r3
