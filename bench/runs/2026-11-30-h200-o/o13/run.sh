#!/bin/bash
# Round o, o13: the tensor-core attention's chunk loads without per-piece address arithmetic
# or a division per chunk, and the output rescale skipped where no running max moved:
# parity; the logits digests of the new and old attention code (the same bits expected) at
# depths 0, 4096 and 32768; decode at depth 32768, old and new in turn, twice.
# Binaries: .device/o13 (new), .device/o13/old (HEAD's attend_mma.cu, the same digest command).
P=.device/o13
source tools/bench/with_model.sh 260
for b in $P/cuda_test $P/old/cuda_test; do
    timeout 120 $b digest /tmp/g30.gguf 0 4096 32768 >> $OUT/digest.log 2>&1; echo "digest $b rc $?" >> $OUT/rc.txt
done
for rep in 1 2; do
    for b in $P/old/cuda_test $P/cuda_test; do
        echo "== $b" >> $OUT/depth.log
        timeout 120 $b depth /tmp/g30.gguf 32768 2>&1 | grep -E "^decode at depth" | cut -c1-120 >> $OUT/depth.log
    done
done
