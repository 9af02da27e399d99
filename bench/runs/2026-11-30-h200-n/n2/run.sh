#!/bin/bash
# Round n, n2: the gate/up launch as one stream of columns per warp (DecodeTuning::gate_up_flat,
# mvq_gu_swiglu_flat): parity, the interleaved A/B (full-size bit check at depth 0), the bench.
# Binaries: .device/n2.
P=.device/n2
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
( time timeout 120 $P/cuda_test flat /tmp/g30.gguf 0 32768 ) > $OUT/flat.log 2>&1; echo "flat rc $?" >> $OUT/rc.txt
( time timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
