#!/bin/bash
# Round d, d3: what sits between two step graphs costs (`cuda_test boundary`: the same
# position replayed, host queued ahead) at depths 0, 64 and 100, and `cuda_test omit` at depths
# 0 and 100 (the in-graph cost of each kernel class as the attention's rows grow).
P=.device/d3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 150 $P/cuda_test boundary /tmp/g30.gguf 0 64 100 ) > $OUT/boundary.log 2>&1; echo "boundary rc $?" >> $OUT/rc.txt
( timeout 200 $P/cuda_test omit /tmp/g30.gguf 0 100 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep "^boundary" $OUT/boundary.log
grep "^omit" $OUT/omit.log
