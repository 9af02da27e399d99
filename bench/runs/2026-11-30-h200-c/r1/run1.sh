#!/bin/bash
# cuda-deliver r1: parity (op cases + embed gather + upload + model), then muser bench with
# pinned upload, GPU gather/argmax, depths by synthetic fill, pp512.
P=.device/deliver
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
$P/muser inspect /tmp/g30.gguf 2>&1 | grep -E "token_embd|^output.weight" > $OUT/inspect.txt
( time timeout 240 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 90 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --host-logits --bandwidth 4280 ) > $OUT/bench_host_logits.log 2>&1; echo "bench host rc $?" >> $OUT/rc.txt
