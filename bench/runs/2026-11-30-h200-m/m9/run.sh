#!/bin/bash
# Round m, after the last GPU changes (the Q/K/V epilogue's L1 prefetch removed, the shared
# tensor-core chunk step mma_chunk): parity, and the bench at depths 0 and 32768 with the
# final defaults. Binaries: .device/m9.
P=.device/m9
source tools/bench/with_model.sh 150
( time timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
