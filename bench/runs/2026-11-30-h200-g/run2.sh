#!/bin/bash
# Round 2 (h200-g): the SwiGLU fold as one kernel (bool option), the one-exchange norm tail
# A/B (separate, fold, fold + one-exchange norm: interleaved) at depth 0, 4096, 32768, then the bench of this branch and of main
# (muser_main: .device/v7, main's CUDA code), interleaved. Logs under $OUT.
P=.device/swiglu
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 150 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 90 $P/cuda_test ab /tmp/g30.gguf 4096 32768 ) > $OUT/ab.log 2>&1; echo "ab rc $?" >> $OUT/rc.txt
B="bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 40 $P/muser $B ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 40 $P/muser_main $B ) > $OUT/bench_main.log 2>&1; echo "bench_main rc $?" >> $OUT/rc.txt
( time timeout 40 $P/muser $B ) >> $OUT/bench.log 2>&1; echo "bench2 rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|folded|fold_swiglu|norm_one_sum|cuda session KL" $OUT/cuda_test.log | grep -v "launches" | tail -40
grep -E "^tuning|^full-size|decode at depth" $OUT/ab.log | sed 's/, attention.*//; s/ DecodeTuning.*//'
grep -E "tg128|real" $OUT/bench.log $OUT/bench_main.log
