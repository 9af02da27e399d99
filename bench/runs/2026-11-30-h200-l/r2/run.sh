#!/bin/bash
# Round l r2: the folded merge's interleaved A/B (r1's crashed: too few positions for its
# warm-up), the in-graph costs at depth 0, the bench twice.
P=.device/s15
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 200 $P/cuda_test fold /tmp/g30.gguf 0 32768 ) > $OUT/fold.log 2>&1; echo "fold rc $?" >> $OUT/rc.txt
( time timeout 100 $P/cuda_test omit /tmp/g30.gguf 0 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
for i in 1 2; do
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench$i.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
done
