#!/bin/bash
# The first device call of the next session: the changes made after round l's last device
# run (the review fixes: the folded merge recomputing its split weights, f16 prefill copies
# installed only when complete, the session waiting for an in-flight pinned copy before
# freeing it, pinned logits not write-combined; the CLI's KV reserve for the f16 copies and
# `serve --prefill-weights`). Build from main, copy stripped `muser` and the `cuda` test binary
# to .device/next, carry it.
P=.device/next
L=bench/runs/2026-11-30-h200-l
source tools/bench/with_model.sh 200
( time timeout 100 $P/cuda_test fold /tmp/g30.gguf 0 ) > $OUT/fold.log 2>&1; echo "fold rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,8192 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
bash tools/bench/serve_check.sh $P 60 2
