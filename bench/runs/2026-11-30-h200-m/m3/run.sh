#!/bin/bash
# Round m, call 3: L2 prefetch by extra blocks of the latency-bound launches (norm tails,
# per-head folded attention; DecodeTuning::l2_prefetch, kernels/prefetch.cu): parity (bits
# with it on), the A/B at depths 0 and 32768. Binaries: .device/m3.
P=.device/m3
source tools/bench/with_model.sh 200
( time timeout 200 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
