#!/bin/bash
# Round p, p3: the FFN down projection's rows split over more blocks (DecodeTuning::down_split,
# mvq_split_*): parity (op and model, at the oracle's bar; same-bits flips against the
# matching split setting), then the interleaved A/B of slice widths at depths 0 and 32768.
# Binaries: .device/p3.
P=.device/p3
source tools/bench/with_model.sh 300
( time timeout 250 $P/cuda_test split /tmp/g30.gguf 0 32768 ) > $OUT/split.log 2>&1; echo "split rc $?" >> $OUT/rc.txt
( time timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
