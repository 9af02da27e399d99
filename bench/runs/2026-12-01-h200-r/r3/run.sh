#!/bin/bash
# Round r, r3: f16-only tensor-core attention with 128 / 256 / 512 rows per split on the
# caches below 8,192 rows (the sliding rings at depth), and the cluster merge where a
# sliding ring is one cluster (8 splits of 256 rows): `cuda_test mmar` at depths 0, 4096 and
# 32768 (the r2 engine; only the test binary's A/B list changed). Binaries: .device/r3.
P=.device/r3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 280 $P/cuda_test mmar /tmp/g30.gguf 0 4096 32768 ) > $OUT/mmar.log 2>&1; echo "mmar rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep "round" $OUT/mmar.log | cut -c1-120
