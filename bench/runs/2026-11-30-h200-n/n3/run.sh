#!/bin/bash
# Round n, n3: the L2 prefetch in bulk (L2Prefetch::bulk: one cp.async.bulk.prefetch.L2 per
# 16 KB from the extra blocks) against the per-line prefetch and none, at depths 0 and 32768,
# with the full-size bit check at depth 0. Binaries: .device/n3.
P=.device/n3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 240 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
