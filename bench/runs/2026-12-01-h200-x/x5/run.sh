#!/bin/bash
# Round x, call 5: parity (the streamed LM head's bits), then the LM head as a grid-stride loop
# against the segment launch (`cuda_test lmstream`), depths 0 and 32,768.
P=.device/x5
source tools/bench/with_model.sh 200
grep -E "FAIL|passed" $OUT/cuda_test.log | tail -6
( timeout 200 $P/cuda_test lmstream /tmp/g30.gguf 0 32768 ) > $OUT/lmstream.log 2>&1; echo "lmstream rc $?"
grep -E "ab depth|differ" $OUT/lmstream.log
