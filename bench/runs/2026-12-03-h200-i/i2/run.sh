#!/bin/bash
# Round i, i2: main's on/off defaults flipped one at a time against the default
# (`cuda_test recheck`, the test binary of main plus that mode) at depths 0 and 32768.
P=.device/i2
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 400 $P/cuda_test recheck /tmp/g30.gguf 0 32768 ) > $OUT/recheck.log 2>&1; echo "recheck rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "^ab|differ" $OUT/recheck.log | cut -c1-160
