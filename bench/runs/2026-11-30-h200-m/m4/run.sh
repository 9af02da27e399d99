#!/bin/bash
# Round m, call 4: L2 prefetch by extra blocks of the latency-bound launches (norm tails,
# per-head folded attention; DecodeTuning::l2_prefetch, kernels/prefetch.cu): parity (bits
# with it on), the A/B at depths 0 and 32768. Binaries: .device/m4. The parity labels fix (m3 left the prefetch tuning set for the fold check), the block-count and fraction sweep.
P=.device/m4
source tools/bench/with_model.sh 200
( time timeout 200 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
