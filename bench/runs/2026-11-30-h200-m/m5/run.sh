#!/bin/bash
# Round m, call 5: the L2 prefetch with no extra block (the norm tail's and the attention's
# own blocks prefetch first) beside the extra-block version, fractions around m4's best
# (16 blocks, Q/K/V/gate 30 %, output projection 100 %, gate/up 6 %); parity.
P=.device/m5
source tools/bench/with_model.sh 200
( time timeout 200 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
