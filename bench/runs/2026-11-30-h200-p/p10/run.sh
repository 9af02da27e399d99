#!/bin/bash
# Round p, p10: the tensor-core attention's shapes (cuda_test mma: rows per split of long
# caches 256 / 1024, chunk 32, a 4-stage ring, from 4,096 rows) against the default, at depths
# 4096 and 32768, interleaved. Binaries: .device/p10.
P=.device/p10
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 200 $P/cuda_test mma /tmp/g30.gguf 4096 32768 ) > $OUT/mma.log 2>&1; echo "mma rc $?" >> $OUT/rc.txt
