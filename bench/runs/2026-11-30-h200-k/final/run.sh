#!/bin/bash
# Round k, final check of main (binaries of the final commit, .device/final-k): parity, the
# bench with pp and tg at depths, decode at depth 131,072 with the KV arithmetic, and
# `muser run` end to end on the 30B file (the prompt through the batched prefill).
P=.device/final-k
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
source tools/bench/with_model.sh 240
( time timeout 150 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 60 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
P1=$(python3 -c "print('The quick brown fox jumps over the lazy dog. ' * 60)" 2>/dev/null || printf 'The quick brown fox jumps over the lazy dog. %.0s' $(seq 60))
( time timeout 90 $P/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run.log 2>&1; echo "run rc $?" >> $OUT/rc.txt
