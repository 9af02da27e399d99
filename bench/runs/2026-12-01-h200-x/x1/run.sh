#!/bin/bash
# Round x, call 1: parity with the tail prefetch's checks (bits with it on, its profile marks),
# then the tail prefetch A/B (`cuda_test tailpf`) at depths 0 and 32,768.
P=.device/x1
source tools/bench/with_model.sh 200
grep -E "FAIL|passed|tail prefetch" $OUT/cuda_test.log | tail -12
( timeout 300 $P/cuda_test tailpf /tmp/g30.gguf 0 32768 ) > $OUT/tailpf.log 2>&1; echo "tailpf rc $?"
grep -E "ab depth|differ" $OUT/tailpf.log
