#!/bin/bash
# Round w, call 8: the L2 prefetch's amounts around the default, one at a time (`cuda_test
# pfsweep`, interleaved, 4 rounds) at depths 0 and 32,768.
P=.device/w8
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 400 $P/cuda_test pfsweep /tmp/g30.gguf 0 32768 ) > $OUT/pfsweep.log 2>&1; echo "pfsweep rc $?"
grep -E "ab depth" $OUT/pfsweep.log
