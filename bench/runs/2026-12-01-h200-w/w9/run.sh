#!/bin/bash
# Round w, call 9: the Q/K/V/gate share of the L2 prefetch at 30 (default), 20, 15, 10 and 0 %,
# and 20 % with the output projection's 80 % (`cuda_test pfqkvg`), depths 0 and 32,768.
P=.device/w8
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 300 $P/cuda_test pfqkvg /tmp/g30.gguf 0 32768 ) > $OUT/pfqkvg.log 2>&1; echo "pfqkvg rc $?"
grep -E "ab depth" $OUT/pfqkvg.log
