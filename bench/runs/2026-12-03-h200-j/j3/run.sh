#!/bin/bash
# Round j, j3: tools/bench/mvbw/tlb.cu (nvcc on the device): a plain read of a matrix-sized
# region with its address translations warm, cold (after 16 GB of other reads, as in the
# engine's token), and cold then re-warmed by a one-word-per-page touch launch; then the
# engine with DecodeTuning::tlb_touch (`cuda_test tlbab`, interleaved) at depths 0 and 0.
P=.device/j3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
bash tools/bench/mvbw/run.sh $OUT tlb > $OUT/run.log 2>&1; echo "tlb rc $?" >> $OUT/rc.txt
rm -f $OUT/tlb
wait $SYN
( timeout 200 $P/cuda_test tlbab /tmp/g30.gguf 0 0 ) > $OUT/tlbab.log 2>&1; echo "tlbab rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt; cat $OUT/tlb.build.log | head; cat $OUT/tlb.log
grep -E "^ab|differ" $OUT/tlbab.log | cut -c1-160
