#!/bin/bash
# Round j, j4: main after the round (the argmax folded into the LM head, j1): parity while the
# 30B file is made, `muser bench` (pp512; tg128 at depths 0, 4096 and 32768), decode at depth
# 131072 with the KV bytes, `muser run` on a 1,022-token prompt; then tools/bench/mvbw/tlb.cu
# (nvcc on the device; j3's build failed on a macro name); `cuda_test lm5` (the flat LM head at
# 5 blocks a SM, DecodeTuning::lm_blocks5, off by default; interleaved A/B) at depth 0.
P=.device/j4
source tools/bench/with_model.sh 220
( time timeout 150 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 90 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth131072.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
bash tools/bench/prompt_run.sh $P 40
( timeout 120 $P/cuda_test lm5 /tmp/g30.gguf 0 ) > $OUT/lm5.log 2>&1; echo "lm5 rc $?" >> $OUT/rc.txt
bash tools/bench/mvbw/run.sh $OUT tlb > $OUT/tlbrun.log 2>&1; echo "tlb rc $?" >> $OUT/rc.txt
rm -f $OUT/tlb
bash tools/bench/final_summary.sh 2>/dev/null
grep -E "^ab|differ|flat LM head|lm_blocks5" $OUT/lm5.log $OUT/cuda_test.log | grep -v " ok$" | cut -c1-150 | head -12
grep -E "^ab|differ" $OUT/lm5.log | cut -c1-150
cat $OUT/tlb.build.log | head -5; cat $OUT/tlb.log
