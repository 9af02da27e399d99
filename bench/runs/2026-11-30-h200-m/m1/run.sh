#!/bin/bash
# Round m, call 1: the review fixes of round l (never run on a GPU before: the folded merge
# recomputing its split weights, f16 prefill copies installed only when complete, the
# session waiting for an in-flight pinned copy, non-write-combined pinned logits, the CLI's
# KV reserve), and the L2 prefetch A/B (DecodeTuning::l2_prefetch). Binaries: .device/m1.
P=.device/m1
L=bench/runs/2026-11-30-h200-m
source tools/bench/with_model.sh 200
( time timeout 150 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
( time timeout 60 $P/cuda_test fold /tmp/g30.gguf 0 ) > $OUT/fold.log 2>&1; echo "fold rc $?" >> $OUT/rc.txt
( time timeout 100 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
bash tools/bench/serve_check.sh $P 60 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >> $OUT/rc.txt
