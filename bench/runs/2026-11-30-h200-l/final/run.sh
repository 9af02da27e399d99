#!/bin/bash
# Round l final check (attention laid out by span, DecodeTuning::span_graphs, plus everything
# of r1-r7): parity; decode in long sessions holding few rows by span and by capacity; the
# bench (pp512/2048/8192, tg128 at depths 0, 4096, 32768); decode at depth 131072 with the KV
# bytes against the arithmetic; `muser run`; the serve load.
P=.device/s21
L=bench/runs/2026-11-30-h200-l
source tools/bench/with_model.sh 200
( time timeout 100 $P/cuda_test span /tmp/g30.gguf ) > $OUT/span.log 2>&1; echo "span rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 90 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth131072.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
bash tools/bench/prompt_run.sh $P 40
bash tools/bench/serve_check.sh $P 60 2
