#!/bin/bash
# Round p, p5: the tensor-core attention's K/V copies evict-first in L2 (branch cuda-kv-hint)
# against main (weight loads evict-first): digests (the same bits expected), decode at depths
# 0, 4096 and 32768 in turn, twice; then the L2 prefetch sweep on main at 0 and 32768.
# Binaries: .device/p5 (main), .device/p5/kv (the branch).
P=.device/p5
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
for b in $P $P/kv; do
    timeout 100 $b/cuda_test digest /tmp/g30.gguf 0 32768 >> $OUT/digest.log 2>&1; echo "digest $b rc $?" >> $OUT/rc.txt
done
for i in 1 2; do for b in $P $P/kv; do
    echo "== $b" >> $OUT/depth.log
    timeout 100 $b/cuda_test depth /tmp/g30.gguf 4096 32768 2>&1 | grep -v "^profile" >> $OUT/depth.log; echo "depth $b rc $?" >> $OUT/rc.txt
done; done
( time timeout 200 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
