#!/bin/bash
# Round z, z3: with the new Q6_K split layout (.device/z2/new), the LM head through the flat
# kernel against the segment kernel (cuda_test lmflat, interleaved) at depths 0 and 32768.
P=.device/z2/new
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 200 $P/cuda_test lmflat /tmp/g30.gguf 0 32768 ) > $OUT/lmflat.log 2>&1
grep -v "^profile" $OUT/lmflat.log | cut -c1-150 | tail -20
