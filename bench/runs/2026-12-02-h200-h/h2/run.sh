#!/bin/bash
# Round h, h2: h1's window arguments with the step graphs instantiated twice (consecutive steps
# alternate, so a step's node rewrite never touches the instantiation the step before runs):
# parity, `cuda_test window` at depths 0 and 32768, the profile labels, tg128, then
# `cuda_test omit` at depth 0 (its "window updates" case: replays without the rewrite, the
# most the arguments could give).
P=.device/h2
source bench/runs/2026-12-02-h200-e/flip.sh window
( timeout 150 $P/cuda_test omit /tmp/g30.gguf 0 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
grep -E "^omit" $OUT/omit.log | grep -E "nothing|window"
