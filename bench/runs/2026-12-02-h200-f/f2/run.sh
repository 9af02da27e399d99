#!/bin/bash
# Round f, f2 (a diagnostic build: f1 plus the plain gate/up launch in clusters of 2 or 8 when
# norm_gate_up is 1002 / 1008; patch beside this script): the gate/up kernels' cluster
# occupancy, then `cuda_test normgu` at depth 0 (apart, folded, apart in clusters).
P=.device/f2
( $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
( timeout 60 $P/cuda_test clusters ) > $OUT/clusters.log 2>&1; echo "clusters rc $?" >> $OUT/rc.txt
wait
( timeout 200 $P/cuda_test normgu /tmp/g30.gguf 0 ) > $OUT/normgu.log 2>&1; echo "normgu rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep clusters $OUT/clusters.log
grep -E "^ab|differ" $OUT/normgu.log | cut -c1-160
