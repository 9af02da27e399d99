#!/bin/bash
# The first device call of the next session: the changes made after round l's last device
# run (the review fixes: the folded merge recomputing its split weights, f16 prefill copies
# installed only when complete, the session waiting for an in-flight pinned copy before
# freeing it, pinned logits not write-combined; the CLI's KV reserve for the f16 copies and
# `serve --prefill-weights`). Build from main, copy stripped `muser` and the `cuda` test binary
# to .device/next, carry it.
P=.device/next
L=bench/runs/2026-11-30-h200-l
source tools/bench/with_model.sh 200
( time timeout 100 $P/cuda_test fold /tmp/g30.gguf 0 ) > $OUT/fold.log 2>&1; echo "fold rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,8192 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
$P/muser serve -m /tmp/g30.gguf --device cuda --port 8090 --parallel 8 -c 4096 --quiet > $OUT/serve.log 2>&1 &
SRV=$!
for i in $(seq 120); do python3 -c "import urllib.request; urllib.request.urlopen('http://localhost:8090/health')" 2>/dev/null && break; sleep 0.5; done
for rep in 1 2; do for n in 1 8; do timeout 60 python3 tools/bench/serve_load.py http://localhost:8090 $n 128 20 >> $OUT/load.log 2>&1; echo "load n=$n rc $?" >> $OUT/rc.txt; done; done
kill $SRV; wait $SRV 2>/dev/null
