#!/bin/bash
# Round d, d4: the short caches' KV rows kept in L2 (`cuda_test kvkeep`: the per-head
# attention prefetching its K and V lines into L2 as evict-last first, at spans up to 128 and
# 512 rows, against the default) at depths 0 and 200; the bits checked against the default.
P=.device/d4
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 300 $P/cuda_test kvkeep /tmp/g30.gguf 0 200 ) > $OUT/kvkeep.log 2>&1; echo "kvkeep rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "differ|^ab" $OUT/kvkeep.log
