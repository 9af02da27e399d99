#!/bin/bash
# Round x, call 6: the KV rows the attention reads prefetched by the Q/K/V/gate launch's tail
# (`cuda_test tailkv`), depths 0, 4,096 and 32,768.
P=.device/x6
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 330 $P/cuda_test tailkv /tmp/g30.gguf 0 4096 32768 ) > $OUT/tailkv.log 2>&1; echo "tailkv rc $?"
grep -E "ab depth|differ" $OUT/tailkv.log
