#!/bin/bash
# Round q, q7 (branch cuda-mma-ilp): the tensor-core attention's S = Q·Kᵀ in four independent
# accumulator sets (shorter mma chains): parity, then decode at depths 0 and 32768 with main's
# build and this one in turn, twice. Binaries: .device/q7 (branch), .device/q7/main (main).
P=.device/q7
source tools/bench/with_model.sh 300
for i in 1 2; do for b in $P/main $P; do
    echo "== $b" >> $OUT/depth.log
    timeout 100 $b/cuda_test depth /tmp/g30.gguf 0 32768 2>&1 | grep -v "^profile" >> $OUT/depth.log; echo "depth $b rc $?" >> $OUT/rc.txt
done; done
timeout 100 $P/cuda_test depth /tmp/g30.gguf 32768 2>&1 | grep "^profile" > $OUT/profile32768.log
