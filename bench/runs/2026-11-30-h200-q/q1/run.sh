#!/bin/bash
# Round q, q1 (branch cuda-pdl-tails): the post-norm tails as programmatic dependent launches
# (DecodeTuning::pdl_tails): parity (the flip in the same-bits checks), the interleaved A/B
# with the full-size bit check at depth 0, and decode of main's build and this one in turn.
# Binaries: .device/q1 (this branch), .device/q1/main (main's).
P=.device/q1
source tools/bench/with_model.sh 260
( time timeout 120 $P/cuda_test pdl /tmp/g30.gguf 0 32768 ) > $OUT/pdl.log 2>&1; echo "pdl rc $?" >> $OUT/rc.txt
for i in 1 2; do for b in $P/main $P; do
    echo "== $b" >> $OUT/depth.log
    timeout 100 $b/cuda_test depth /tmp/g30.gguf 0 32768 2>&1 | grep -v "^profile" >> $OUT/depth.log; echo "depth $b rc $?" >> $OUT/rc.txt
done; done
