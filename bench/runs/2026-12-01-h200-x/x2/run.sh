#!/bin/bash
# Round x, call 2: parity (the tail prefetch's profile check mended; the LM head span), then the
# tail prefetch sweep (`cuda_test tailsweep`) at depths 0 and 32,768.
P=.device/x2
source tools/bench/with_model.sh 200
grep -E "FAIL|passed|tail prefetch" $OUT/cuda_test.log | tail -12
( timeout 320 $P/cuda_test tailsweep /tmp/g30.gguf 0 32768 ) > $OUT/tailsweep.log 2>&1; echo "tailsweep rc $?"
grep -E "ab depth|differ" $OUT/tailsweep.log
