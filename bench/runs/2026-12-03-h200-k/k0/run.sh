#!/bin/bash
# Round k, k0: main's final build of round j (ff4afda), not yet run on the device: parity while
# the 30B file is made, `muser bench` (pp512; tg128 at depths 0, 4096 and 32768), decode at
# depth 131072 with the KV bytes.
P=.device/k0
source tools/bench/with_model.sh 240
( time timeout 150 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 90 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth131072.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
bash tools/bench/final_summary.sh 2>/dev/null
grep -E "FAIL" $OUT/cuda_test.log | head -20
