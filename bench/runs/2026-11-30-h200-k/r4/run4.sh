#!/bin/bash
# Round k, call 4: the Q4_K tail task (nb % 8 == 2: the last 2 blocks of 4 rows as one task
# per lane, with the last whole trip): parity, then the bench interleaved with main's binary
# (.device/s5), and the in-graph costs.
P=.device/s8
M=.device/s5
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
B="-p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 90 $P/muser bench -m /tmp/g30.gguf --device cuda $B ) > $OUT/bench-new-1.log 2>&1; echo "bench new 1 rc $?" >> $OUT/rc.txt
( time timeout 90 $M/muser bench -m /tmp/g30.gguf --device cuda $B ) > $OUT/bench-main-1.log 2>&1; echo "bench main 1 rc $?" >> $OUT/rc.txt
( time timeout 90 $P/muser bench -m /tmp/g30.gguf --device cuda $B ) > $OUT/bench-new-2.log 2>&1; echo "bench new 2 rc $?" >> $OUT/rc.txt
( time timeout 90 $M/muser bench -m /tmp/g30.gguf --device cuda $B ) > $OUT/bench-main-2.log 2>&1; echo "bench main 2 rc $?" >> $OUT/rc.txt
( time timeout 60 $P/cuda_test omit /tmp/g30.gguf 0 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
