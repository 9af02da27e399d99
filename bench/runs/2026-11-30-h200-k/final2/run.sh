#!/bin/bash
# Round k, second final check (after the review fixes: bf16 SwiGLU output and down
# projection, transactional chunks, MIN_BATCH, one attention kernel): parity, short prompts
# batched vs token by token (cuda_test pfsmall), the bench, `muser run` end to end.
P=.device/final-k2
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
source tools/bench/with_model.sh 240
( time timeout 120 $P/cuda_test pfsmall /tmp/g30.gguf ) > $OUT/pfsmall.log 2>&1; echo "pfsmall rc $?" >> $OUT/rc.txt
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048 -n 128 -d 0,32768 -r 3 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
P1=$(python3 -c "print('The quick brown fox jumps over the lazy dog. ' * 60)" 2>/dev/null || printf 'The quick brown fox jumps over the lazy dog. %.0s' $(seq 60))
( time timeout 90 $P/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run.log 2>&1; echo "run rc $?" >> $OUT/rc.txt
