#!/bin/bash
# Round a, a2: a1's leads (more L2-prefetch blocks, larger Q/K/V/gate and output-projection
# shares; cuda_test pfcombo), interleaved A/B at depths 0 and 32768, twice.
P=.device/a1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
for i in 1 2; do
  ( time timeout 120 $P/cuda_test pfcombo /tmp/g30.gguf 0 32768 ) > $OUT/pfcombo$i.log 2>&1; echo "pfcombo rc $?" >> $OUT/rc.txt
done
