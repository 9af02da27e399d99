#!/bin/bash
# Round l, l2: l1 plus the one-token Q8_0 kernel at 4 rows a warp (f32 activations, no I2F).
# Parity (the 30B Q4_K_M file made meanwhile), kernel bandwidth, the 30B bench at depth 0
# (a regression check of the Q4_K_M step, whose kernels did not change).
P=.device/l2
source tools/bench/with_model.sh 260
( time timeout 60 $P/cuda_test bw ) > $OUT/bw.log 2>&1; echo "bw rc $?" >> $OUT/rc.txt
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|(q5k|q8|mid_hd128).*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-200 | tail -26
grep -E "^bandwidth" $OUT/bw.log
grep -vE "^\s*$" $OUT/bench.log | tail -5
