#!/bin/bash
# Round k, third final check (SwiGLU scaled by powers of two in f16 instead of the bf16 down
# projection): parity, the bench with pp, `muser run` end to end.
P=.device/final-k3
source tools/bench/with_model.sh 200
( time timeout 90 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048 -n 128 -d 0 -r 3 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
P1=$(python3 -c "print('The quick brown fox jumps over the lazy dog. ' * 60)" 2>/dev/null || printf 'The quick brown fox jumps over the lazy dog. %.0s' $(seq 60))
( time timeout 60 $P/muser run --model /tmp/g30.gguf --device cuda --temp 0 -n 16 -p "$P1" ) > $OUT/run.log 2>&1; echo "run rc $?" >> $OUT/rc.txt
( time timeout 120 $P/cuda_test /tmp/g30.gguf 0 32768 ) > $OUT/session.log 2>&1; echo "session rc $?" >> $OUT/rc.txt
