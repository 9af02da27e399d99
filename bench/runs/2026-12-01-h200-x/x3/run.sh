#!/bin/bash
# Round x, call 3: parity at 2861f5c+ (the tail prefetch on by default; the pipelined rows'
# bits), then the pipelined one-matrix rows A/B (`cuda_test pipe`) at depths 0 and 32,768.
P=.device/x3
source tools/bench/with_model.sh 200
grep -E "FAIL|passed" $OUT/cuda_test.log | tail -6
( timeout 300 $P/cuda_test pipe /tmp/g30.gguf 0 32768 ) > $OUT/pipe.log 2>&1; echo "pipe rc $?"
grep -E "ab depth|differ" $OUT/pipe.log
