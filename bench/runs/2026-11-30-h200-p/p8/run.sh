#!/bin/bash
# Round p, p8: the evict-first weight loads with L1 evict-first (l1ef), through the non-coherent path (nc), or both (ncl1ef)
# against main: digests (the same bits expected), decode at depths 0 and 32768, the four
# builds in turn, twice. Binaries: .device/p8 (main), .device/p8/l1ef, .device/p8/nc, .device/p8/ncl1ef.
P=.device/p8
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
for b in $P $P/l1ef $P/nc $P/ncl1ef; do
    timeout 100 $b/cuda_test digest /tmp/g30.gguf 0 >> $OUT/digest.log 2>&1; echo "digest $b rc $?" >> $OUT/rc.txt
done
for i in 1 2; do for b in $P $P/l1ef $P/nc $P/ncl1ef; do
    echo "== $b" >> $OUT/depth.log
    timeout 100 $b/cuda_test depth /tmp/g30.gguf 0 32768 2>&1 | grep -v "^profile" >> $OUT/depth.log; echo "depth $b rc $?" >> $OUT/rc.txt
done; done
