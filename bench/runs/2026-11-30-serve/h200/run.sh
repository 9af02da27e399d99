#!/usr/bin/env bash
# Device check for issue 5 on the lent H200 (binaries built on the dev VM, stripped, carried in
# .device/serve): batch invariance and batched decode through the scheduler with the CUDA
# backend, then the HTTP load test with --device cuda. Two calls were made: the first ran
# everything (its load test stopped on a bad assumption of the script, that no reference
# stream ends early on a sampled EOS/EOT: fixed), the second only the synth + load test lines.
set -x
D=.device/serve
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv > $OUT/gpu.txt 2>&1
$D/muser synth --preset tiny --out /tmp/tiny.gguf -q > $OUT/synth.log 2>&1
$D/muser synth --preset tiny --layers 8 --hidden 4096 --heads 32 --kv-heads 2 --head-dim 128 --ffn 12288 --vocab 32000 --out /tmp/mid.gguf -q >> $OUT/synth.log 2>&1
timeout 120 $D/batch_decode /tmp/tiny.gguf 1,8 64 cuda > $OUT/batch_tiny_cuda.log 2>&1
timeout 120 $D/batch_decode /tmp/tiny.gguf 1,8 64 > $OUT/batch_tiny_cpu.log 2>&1
timeout 200 $D/batch_decode /tmp/mid.gguf 1,4,8,16 32 cuda > $OUT/batch_mid_cuda.log 2>&1
timeout 150 python3 tools/loadtest/loadtest.py --muser $D/muser --device cuda --clients 16 --seconds 15 --scale-seconds 8 --parallel 16 --workdir /tmp/lt --out $OUT/loadtest_cuda.md > $OUT/loadtest_cuda.log 2>&1
