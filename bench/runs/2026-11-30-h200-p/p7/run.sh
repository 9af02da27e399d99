#!/bin/bash
# Round p, p7: the evict-first weight loads with an L2 prefetch-size hint (.L2::256B, .L2::128B)
# against main: digests (the same bits expected), decode at depths 0 and 32768, the three
# builds in turn, twice. Binaries: .device/p7 (main), .device/p7/b256, .device/p7/b128.
P=.device/p7
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
for b in $P $P/b256 $P/b128; do
    timeout 100 $b/cuda_test digest /tmp/g30.gguf 0 >> $OUT/digest.log 2>&1; echo "digest $b rc $?" >> $OUT/rc.txt
done
for i in 1 2; do for b in $P $P/b256 $P/b128; do
    echo "== $b" >> $OUT/depth.log
    timeout 100 $b/cuda_test depth /tmp/g30.gguf 0 32768 2>&1 | grep -v "^profile" >> $OUT/depth.log; echo "depth $b rc $?" >> $OUT/rc.txt
done; done
