#!/bin/bash
# Round g, g5: where g4's fused launch loses: `cuda_test aoprof` (the event-timed profile with
# DecodeTuning::attn_oproj off and at 30 %) at depth 0, on g4's kernels.
P=.device/g5
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 120 $P/cuda_test aoprof /tmp/g30.gguf 0 ) > $OUT/aoprof.log 2>&1; echo "aoprof rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "^aoprof|^profile" $OUT/aoprof.log | cut -c1-150 | head -30
