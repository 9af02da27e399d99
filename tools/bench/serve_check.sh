#!/bin/bash
# The serve load of a round's run script, on the device machine (repository root, $OUT set,
# /tmp/g30.gguf generated): `muser serve --device cuda` with 8 slots, then
# tools/bench/serve_load.py with 1 and 8 clients (128 tokens, 20 s), REPS times, each load
# under TIMEOUT seconds; logs and return codes under $OUT.
#   bash tools/bench/serve_check.sh .device/DIR TIMEOUT REPS
P=${1:?the folder of the stripped muser}
T=${2:?the time limit of one load in seconds}
REPS=${3:?how many times the 1- and 8-client loads run}
$P/muser serve -m /tmp/g30.gguf --device cuda --port 8090 --parallel 8 -c 4096 --quiet > $OUT/serve.log 2>&1 &
SRV=$!
for i in $(seq 120); do python3 -c "import urllib.request; urllib.request.urlopen('http://localhost:8090/health')" 2>/dev/null && break; sleep 0.5; done
for rep in $(seq $REPS); do for n in 1 8; do timeout $T python3 tools/bench/serve_load.py http://localhost:8090 $n 128 20 >> $OUT/load.log 2>&1; echo "load n=$n rc $?" >> $OUT/rc.txt; done; done
kill $SRV; wait $SRV 2>/dev/null
