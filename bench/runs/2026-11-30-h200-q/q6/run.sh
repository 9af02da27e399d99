#!/bin/bash
# Round q, q6 (main, the engine code of round p's p11): parity, the per-kernel profile and
# decode at depths 0 and 32768, each kernel class's in-graph cost (`cuda_test omit`), and the
# bench. Binaries: .device/q6.
P=.device/q6
source tools/bench/with_model.sh 300
( time timeout 100 $P/cuda_test depth /tmp/g30.gguf 0 32768 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
( time timeout 150 $P/cuda_test omit /tmp/g30.gguf 0 32768 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
