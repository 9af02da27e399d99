#!/bin/bash
# Round o, o8: the Q/K/V/gate launch with its V and gate types fixed at compile time
# (DecodeTuning::qkv_typed): parity, then the bench first on the fresh machine, the typed A/B
# and the one-matrix A/B again. Binaries: .device/o8.
P=.device/o8
source tools/bench/with_model.sh 260
( time timeout 100 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 120 $P/cuda_test typed /tmp/g30.gguf 0 32768 ) > $OUT/typed.log 2>&1; echo "typed rc $?" >> $OUT/rc.txt
( time timeout 120 $P/cuda_test one /tmp/g30.gguf 0 32768 ) > $OUT/one.log 2>&1; echo "one rc $?" >> $OUT/rc.txt
