#!/bin/bash
# cuda-att2 call 1: parity (default: 8-warp tensor-core attention + wide merge 256), the 30B
# file synthesized meanwhile; the attention/merge A/B at depths 0 4096 32768 131072
# (interleaved); the bench of this branch and of main (.device/final3/muser), interleaved;
# decode at depth 131,072 with the KV arithmetic.
P=.device/att2
M=.device/final3/muser
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 100 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 60 $P/cuda_test att /tmp/g30.gguf 0 4096 32768 131072 ) > $OUT/att.log 2>&1; echo "att rc $?" >> $OUT/rc.txt
B="bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 40 $P/muser $B ) > $OUT/bench_att2.log 2>&1; echo "bench att2 rc $?" >> $OUT/rc.txt
( time timeout 45 $M $B ) > $OUT/bench_main.log 2>&1; echo "bench main rc $?" >> $OUT/rc.txt
( time timeout 15 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
