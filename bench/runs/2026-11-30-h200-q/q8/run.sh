#!/bin/bash
# Round q, q8 (main + the `cuda_test sliding` mode): the sliding layers' 2,048-row rings through
# the per-head kernel with the merge folded in, against the tensor-core kernel and a separate
# merge (interleaved A/B at depths 0 and 32768). Binaries: .device/q8.
P=.device/q8
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 200 $P/cuda_test sliding /tmp/g30.gguf 0 32768 ) > $OUT/sliding.log 2>&1; echo "sliding rc $?" >> $OUT/rc.txt
