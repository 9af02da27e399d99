#!/bin/bash
# Round b, b5: the FFN down projection as a programmatic dependent launch of the gate/up launch
# (DecodeTuning::pdl_down; mvq1.cu's _pw entries: prefetch trips of weights, then
# griddepcontrol.wait; the gate/up launch triggers its dependents at its start). Parity of the
# build (.device/b5: the same-bits flip and the labels), `cuda_test pdl` at depths 0 and 32768
# (interleaved, bits checked), `cuda_test rate` against main before the round (.device/b1).
P=.device/b5
source tools/bench/with_model.sh 300
( time timeout 200 $P/cuda_test pdl /tmp/g30.gguf 0 32768 ) > $OUT/pdl.log 2>&1; echo "pdl rc $?" >> $OUT/rc.txt
for d in .device/b1 $P; do echo "== $d" >> $OUT/rate.log; ( timeout 60 $d/cuda_test rate /tmp/g30.gguf 0 ) >> $OUT/rate.log 2>&1; done
cat $OUT/rc.txt
grep -E "FAIL|passed|pdl_down" $OUT/cuda_test.log | tail -12 | cut -c1-200
grep -E "ab depth|bits|differ" $OUT/pdl.log | cut -c1-100
grep -E "^== |ab depth" $OUT/rate.log | cut -c1-90
