#!/bin/bash
# Round p, p9: the L2 prefetch blocks' lines marked evict-last (prefetch.global.L2::evict_last)
# against main: digests (the same bits expected), decode at depths 0 and 32768 in turn, twice,
# and the prefetch sweep (cuda_test prefetch) with the evict-last build at depth 0.
# Binaries: .device/p9 (main), .device/p9/el.
P=.device/p9
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
for b in $P $P/el; do
    timeout 100 $b/cuda_test digest /tmp/g30.gguf 0 >> $OUT/digest.log 2>&1; echo "digest $b rc $?" >> $OUT/rc.txt
done
for i in 1 2; do for b in $P $P/el; do
    echo "== $b" >> $OUT/depth.log
    timeout 100 $b/cuda_test depth /tmp/g30.gguf 0 32768 2>&1 | grep -v "^profile" >> $OUT/depth.log; echo "depth $b rc $?" >> $OUT/rc.txt
done; done
( time timeout 120 $P/el/cuda_test prefetch /tmp/g30.gguf 0 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
