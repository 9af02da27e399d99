#!/bin/bash
# Round p, p4: weight loads with an L2 evict-first cache policy (branch cuda-l2-hint) against
# main: logits digests (the same bits expected) and decode at depths 0 and 32768, the two
# builds in turn, three times. Binaries: .device/p4 (main), .device/p4/ef (the hint).
P=.device/p4
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
for b in $P $P/ef; do
    timeout 100 $b/cuda_test digest /tmp/g30.gguf 0 32768 >> $OUT/digest.log 2>&1; echo "digest $b rc $?" >> $OUT/rc.txt
done
for i in 1 2 3; do for b in $P $P/ef; do
    echo "== $b" >> $OUT/depth.log
    timeout 100 $b/cuda_test depth /tmp/g30.gguf 0 32768 2>&1 | grep -v "^profile" >> $OUT/depth.log; echo "depth $b rc $?" >> $OUT/rc.txt
done; done
