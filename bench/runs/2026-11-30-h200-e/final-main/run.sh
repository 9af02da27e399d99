#!/bin/bash
# Final check of main after merging cuda-fuse (and the CPU split / spin-pool work): parity, then the bench.
P=.device/v6
source tools/bench/with_model.sh 200
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
