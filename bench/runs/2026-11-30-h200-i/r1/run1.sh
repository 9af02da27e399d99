#!/bin/bash
# cuda-att round 1: parity (with the tensor-core attention op and session checks), then the
# tensor-core attention A/B at depths 0, 4096, 32768, 131072 on the 30B synthetic file.
P=.device/att
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 150 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 150 $P/cuda_test att /tmp/g30.gguf 0 4096 32768 131072 ) > $OUT/att.log 2>&1; echo "att rc $?" >> $OUT/rc.txt
