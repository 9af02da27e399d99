#!/bin/bash
# `muser run --device cuda` on a 1,022-token prompt (16 greedy tokens) under TIMEOUT seconds,
# from a round's run script on the device machine ($OUT set, /tmp/g30.gguf generated).
#   bash tools/bench/prompt_run.sh .device/DIR TIMEOUT
P=${1:?the folder of the stripped muser}
T=${2:?the time limit in seconds}
P1=$(python3 -c "print('The quick brown fox jumps over the lazy dog. ' * 60)")
( time timeout $T $P/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run.log 2>&1; echo "run rc $?" >> $OUT/rc.txt
