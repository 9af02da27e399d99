#!/bin/bash
# Round x, call 4: the latency-bound launches' L2 prefetch moved (in part) to the tails of the
# matvec launches before them, and two L2 amounts re-swept with the tail prefetch on
# (`cuda_test tailmove`), depths 0 and 32,768.
P=.device/x4
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 330 $P/cuda_test tailmove /tmp/g30.gguf 0 32768 ) > $OUT/tailmove.log 2>&1; echo "tailmove rc $?"
grep -E "ab depth|differ" $OUT/tailmove.log
