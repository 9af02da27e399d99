#!/bin/bash
# Round x, call 8: where the time goes on main after this round: each kernel class left out of
# every layer (`cuda_test omit`; wrong logits, the in-graph cost), depths 0 and 32,768.
P=.device/x7
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 300 $P/cuda_test omit /tmp/g30.gguf 0 32768 ) > $OUT/omit.log 2>&1; echo "omit rc $?"
grep -E "^omit" $OUT/omit.log
