#!/bin/bash
# Round m, call 2: the folded merge's per-head kernels back to shared split weights (m1 found
# the review fix had cost ~4 %), the L2 prefetch removed, the bulk-copy Q4_K matvec
# (DecodeTuning::bulk_matvec) for the output projection: parity (incl. the bulk kernels'
# bits on many-tile matrices), the fold A/B, the bulk A/B, in-graph costs, the bench.
P=.device/m2
source tools/bench/with_model.sh 200
( time timeout 60 $P/cuda_test fold /tmp/g30.gguf 0 ) > $OUT/fold.log 2>&1; echo "fold rc $?" >> $OUT/rc.txt
( time timeout 120 $P/cuda_test bulk /tmp/g30.gguf 0 32768 ) > $OUT/bulk.log 2>&1; echo "bulk rc $?" >> $OUT/rc.txt
( time timeout 60 $P/cuda_test omit /tmp/g30.gguf 0 ) > $OUT/omit.log 2>&1; echo "omit rc $?" >> $OUT/rc.txt
( time timeout 100 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
