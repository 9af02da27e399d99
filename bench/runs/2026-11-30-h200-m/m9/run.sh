#!/bin/bash
# Round m, after the last GPU changes (the Q/K/V epilogue's L1 prefetch removed, the shared
# tensor-core chunk step mma_chunk): parity, and the bench at depths 0 and 32768 with the
# final defaults. Binaries: .device/m9.
P=.device/m9
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 150 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
