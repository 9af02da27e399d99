#!/bin/bash
# Round l, l4: the final build (l3 with the Q5_K rows per warp chosen by shape, q5k_rows).
# Parity while the Q4_K/Q5_K/Q6_K mix is made, kernel bandwidth, the mix's bench.
P=.device/l4
( time $P/muser synth --preset 30b --more-bits-type Q5_K --out /tmp/g30q5.gguf -q ) > $OUT/synth_q5.log 2>&1 &
SYN=$!
( time timeout 260 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 60 $P/cuda_test bw ) > $OUT/bw.log 2>&1; echo "bw rc $?" >> $OUT/rc.txt
( time timeout 120 $P/muser bench -m /tmp/g30q5.gguf --device cuda -p 512 -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench_q5.log 2>&1; echo "bench_q5 rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|(q5k|q8|mid_hd128).*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-200 | tail -26
grep -E "^bandwidth (Q5_K|Q8_0|F16|BF16) " $OUT/bw.log
grep -vE "^\s*$" $OUT/bench_q5.log | tail -5
