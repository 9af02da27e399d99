#!/bin/bash
# cuda-att2 call 2 (final code: wide merge 256 on by default, main's tensor-core attention):
# parity while the 30B file is synthesized; the bench of this branch, decode at depth 131,072
# with the KV arithmetic, then main's bench (.device/final3/muser).
P=.device/att2
M=.device/final3/muser
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 58 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
B="bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 20 $P/muser $B ) > $OUT/bench_att2.log 2>&1; echo "bench att2 rc $?" >> $OUT/rc.txt
( time timeout 8 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
( time timeout 25 $M $B ) > $OUT/bench_main.log 2>&1; echo "bench main rc $?" >> $OUT/rc.txt
