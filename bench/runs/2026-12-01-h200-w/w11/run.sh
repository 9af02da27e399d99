#!/bin/bash
# Round w, call 11: the L2 prefetch's blocks (12, 20) and gate/up share (5, 7 %) around the
# default (`cuda_test pffine`), depths 0 and 32,768.
P=.device/w11
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 200 $P/cuda_test pffine /tmp/g30.gguf 0 32768 ) > $OUT/pffine.log 2>&1; echo "pffine rc $?"
grep -E "ab depth" $OUT/pffine.log
