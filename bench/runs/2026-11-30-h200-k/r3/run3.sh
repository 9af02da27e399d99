#!/bin/bash
# Round k, call 3: L2 prefetch on a side branch of the graph (DecodeTuning::l2_prefetch):
# parity (with the every-prefetch bit check), the full-size bit check and the interleaved A/B
# at depths 0 and 32768.
P=.device/s7
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 240 $P/cuda_test l2 /tmp/g30.gguf 0 32768 ) > $OUT/l2.log 2>&1; echo "l2 rc $?" >> $OUT/rc.txt
