#!/bin/bash
# Round k, call 7: the staged output projection A/B again, with the merge left out as well,
# at the driver's carveouts and with every kernel at carveout 100.
P=.device/s11
$P/muser synth --preset 30b --out /tmp/g30.gguf -q > $OUT/synth.log 2>&1
( time timeout 240 $P/cuda_test staged /tmp/g30.gguf 0 32768 ) > $OUT/staged.log 2>&1; echo "staged rc $?" >> $OUT/rc.txt
