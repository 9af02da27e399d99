#!/bin/bash
# Round 1 (h200-f): parity, fold A/B (session at depth 0, 4096, 32768), bench of the branch and of main. Logs under $OUT.
P=.device/fold
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 120 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
if grep -q " 0 failed" $OUT/cuda_test.log; then
( time timeout 70 $P/cuda_test /tmp/g30.gguf ) > $OUT/profile.log 2>&1; echo "profile rc $?" >> $OUT/rc.txt
( time timeout 40 $P/cuda_test depth /tmp/g30.gguf 4096 32768 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
fi
( time timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 60 $P/muser_main bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench_main.log 2>&1; echo "bench_main rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|folded" $OUT/cuda_test.log | tail -12
grep -E "^tuning|decode at depth" $OUT/profile.log $OUT/depth.log | sed 's/q6k_kernel: Some(SegKernel { name: "mvq_seg_44_lb4", rows_q4k: 4, rows_q6k: 4, warps: 4 })/q6k44/'
tail -6 $OUT/bench.log; tail -6 $OUT/bench_main.log
