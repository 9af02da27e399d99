#!/bin/bash
# Round 1 (h200-h, branch cuda-mv): staged Q4_K rows for the sub-wave launches
# (stage_subwave) and the FFN gate/up + SwiGLU launch (stage_gate_up), both on by default in
# these binaries. Parity, then the A/B (full-size bit check, matvec-only speeds, interleaved
# decode speed at depth 0 / 4096 / 32768, profiles), then the bench: this branch, main, this
# branch. Logs under $OUT.
P=.device/mv
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 120 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 90 $P/cuda_test ab /tmp/g30.gguf 4096 32768 ) > $OUT/ab.log 2>&1; echo "ab rc $?" >> $OUT/rc.txt
B="bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 40 $P/muser $B ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 40 $P/muser_main $B ) > $OUT/bench_main.log 2>&1; echo "bench_main rc $?" >> $OUT/rc.txt
( time timeout 40 $P/muser $B ) >> $OUT/bench.log 2>&1; echo "bench2 rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "passed|FAIL|stage|staged" $OUT/cuda_test.log | tail -40
grep -E "^tuning|^full-size|^stage speed|decode at depth" $OUT/ab.log | sed 's/, attention.*//; s/ DecodeTuning.*//'
grep -E "^profile (with|mv attn|mv ffn_gate|: )" $OUT/ab.log | head -16
grep -E "tg128|real" $OUT/bench.log $OUT/bench_main.log
