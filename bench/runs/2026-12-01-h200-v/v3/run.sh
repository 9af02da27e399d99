#!/bin/bash
# v3: as v2, but the latency-bound kernels trigger nothing (their dependents launch as they
# exit); the matvecs trigger after their main loops. Interleaved A/B against plain
# launches at depths 0, 4,096 and 32,768 (the same bits checked on 4 full-size steps).
P=.device/v3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 400 $P/cuda_test pdl /tmp/g30.gguf 0 4096 32768 ) > $OUT/pdl.log 2>&1; echo "pdl rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "ab depth|full-size|FAIL|panic" $OUT/pdl.log
