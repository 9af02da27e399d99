#!/bin/bash
# Round k, call 5: the output projection staged in shared memory behind the merge with
# programmatic dependent launch (DecodeTuning::o_staged): parity, the full-size bit check and
# the A/B at depths 0 and 32768, the bench interleaved with main's binary (.device/s5).
P=.device/s9
M=.device/s5
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 150 $P/cuda_test staged /tmp/g30.gguf 0 32768 ) > $OUT/staged.log 2>&1; echo "staged rc $?" >> $OUT/rc.txt
B="-p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 90 $P/muser bench -m /tmp/g30.gguf --device cuda $B ) > $OUT/bench-new-1.log 2>&1; echo "bench new 1 rc $?" >> $OUT/rc.txt
( time timeout 90 $M/muser bench -m /tmp/g30.gguf --device cuda $B ) > $OUT/bench-main-1.log 2>&1; echo "bench main 1 rc $?" >> $OUT/rc.txt
