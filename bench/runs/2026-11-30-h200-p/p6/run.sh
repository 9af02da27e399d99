#!/bin/bash
# Round p, p6: the down projection's row split again, on top of the evict-first weight loads
# (branch cuda-down-split2): the interleaved A/B of slice widths at depths 0 and 32768.
# Binaries: .device/p6 (the branch).
P=.device/p6
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 250 $P/cuda_test split /tmp/g30.gguf 0 32768 ) > $OUT/split.log 2>&1; echo "split rc $?" >> $OUT/rc.txt
