#!/bin/bash
# v2 (main + DecodeTuning::pdl): every decode kernel as a programmatic dependent launch that
# triggers its dependents once its weight loads are issued; interleaved A/B against plain
# launches at depths 0, 4,096 and 32,768 (the same bits checked on 4 full-size steps).
P=.device/v2
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 400 $P/cuda_test pdl /tmp/g30.gguf 0 4096 32768 ) > $OUT/pdl.log 2>&1; echo "pdl rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "ab depth|full-size|FAIL|panic" $OUT/pdl.log
