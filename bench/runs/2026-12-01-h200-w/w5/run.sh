#!/bin/bash
# Round w, call 5: 6 pieces first in a fresh process, then the default (`cuda_test
# pieces_first`), depths 0 and 32,768; then `cuda_test rate` (the default alone) in another.
P=.device/w3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 200 $P/cuda_test pieces_first /tmp/g30.gguf 0 32768 ) > $OUT/first.log 2>&1; echo "first rc $?"
( timeout 200 $P/cuda_test rate /tmp/g30.gguf 0 32768 ) > $OUT/rate.log 2>&1; echo "rate rc $?"
grep -E "ab depth" $OUT/first.log $OUT/rate.log
