#!/bin/bash
# Round script: parity, session A/B + profile, segment-kernel sweep, depth A/B. Logs under $OUT.
P=.device/fuse
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
( time timeout 100 $P/cuda_test bw ) > $OUT/bw.log 2>&1; echo "bw rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 150 $P/cuda_test /tmp/g30.gguf ) > $OUT/profile.log 2>&1; echo "profile rc $?" >> $OUT/rc.txt
( time timeout 150 $P/cuda_test depth /tmp/g30.gguf 4096 32768 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
grep -E "passed|FAIL|tuning" $OUT/cuda_test.log $OUT/profile.log | tail -20
grep -E "^seg Q6_K 6656x19968|^seg Q4_K 6656x19968" $OUT/bw.log
grep -E "decode at depth" $OUT/depth.log
cat $OUT/rc.txt
