#!/bin/bash
# cuda-att round 2: parity with the tensor-core attention default on (16x4, every layer, 512
# rows per split on long caches), the bench of this branch and of main (.device/final2/muser),
# then the tensor-core attention A/B at depths 0, 4096, 32768, 131072 (interleaved).
P=.device/att
M=.device/final2/muser
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 90 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
B="bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 45 $P/muser $B ) > $OUT/bench_att.log 2>&1; echo "bench att rc $?" >> $OUT/rc.txt
( time timeout 45 $M $B ) > $OUT/bench_main.log 2>&1; echo "bench main rc $?" >> $OUT/rc.txt
( time timeout 75 $P/cuda_test att /tmp/g30.gguf 0 4096 32768 131072 ) > $OUT/att.log 2>&1; echo "att rc $?" >> $OUT/rc.txt
