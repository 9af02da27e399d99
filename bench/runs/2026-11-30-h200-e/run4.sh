#!/bin/bash
# Round script: parity, session A/B + profile, depth A/B, bench. Logs under $OUT.
P=.device/fuse
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 150 $P/cuda_test /tmp/g30.gguf ) > $OUT/profile.log 2>&1; echo "profile rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 150 $P/cuda_test depth /tmp/g30.gguf 32768 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
grep -E "passed|FAIL" $OUT/cuda_test.log | tail -8
grep -E "tuning" $OUT/profile.log | sed -E 's/prefetch_blocks: 0, attn_rows2: false, //; s/fuse_swiglu: false, //'
grep -E "decode at depth" $OUT/depth.log | sed -E 's/prefetch_blocks: 0, attn_rows2: false, //; s/fuse_swiglu: false, //'
tail -8 $OUT/bench.log
cat $OUT/rc.txt
