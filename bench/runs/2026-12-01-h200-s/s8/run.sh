#!/bin/bash
# Round s, s8: the wide merge's threads per block (`cuda_test mt`: 256 default, 64, 128, 512)
# at depths 4096 and 32768. Binaries: .device/s8.
P=.device/s8
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 200 $P/cuda_test mt /tmp/g30.gguf 4096 32768 ) > $OUT/mt.log 2>&1; echo "mt rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "round" $OUT/mt.log | cut -c1-120
