#!/bin/bash
# Round j, j5: j3's page touches at a 64 KB step (DecodeTuning::tlb_touch, off by default; the
# flips list turns it on): parity while the 30B file is made, then `cuda_test tlbab`
# (interleaved A/B, 4 rounds of 100 tokens) at depths 0, 0 and 32768.
P=.device/j5
source tools/bench/with_model.sh 220
( timeout 200 $P/cuda_test tlbab /tmp/g30.gguf 0 0 32768 ) > $OUT/tlbab.log 2>&1; echo "tlbab rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|mid_hd128.*(session KL|cuda KL)|folded argmax" $OUT/cuda_test.log | cut -c1-200 | tail -6
grep -E "^ab|differ" $OUT/tlbab.log | cut -c1-150
