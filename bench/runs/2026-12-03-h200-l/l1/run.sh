#!/bin/bash
# Round l, l1: the Q5_K int8 kernels and the unrolled Q8_0/f16/bf16 one-token kernels.
# Parity while the 30B file is made; kernel bandwidth of every type on two shapes; the 30B
# Q4_K_M bench (regression check); a Q4_K/Q5_K/Q6_K mix (Q5_K on the "more bits" layers'
# attn_v and ffn_down) made and benched; the tail-fold microbenchmark's source is lastblk.cu.
P=.device/l1
source tools/bench/with_model.sh 260
( time timeout 60 $P/cuda_test bw ) > $OUT/bw.log 2>&1; echo "bw rc $?" >> $OUT/rc.txt
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
rm -f /tmp/g30.gguf
( time $P/muser synth --preset 30b --more-bits-type Q5_K --out /tmp/g30q5.gguf -q ) > $OUT/synth_q5.log 2>&1
( time timeout 120 $P/muser bench -m /tmp/g30q5.gguf --device cuda -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench_q5.log 2>&1; echo "bench_q5 rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|q5k.*(cuda session KL|cuda KL)|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-200 | tail -24
grep -E "^bandwidth" $OUT/bw.log
grep -vE "^\s*$" $OUT/bench.log | tail -6
grep -vE "^\s*$" $OUT/bench_q5.log | tail -5
tail -3 $OUT/synth_q5.log
