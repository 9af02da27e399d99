#!/bin/bash
# The device check a round ends with, run from the repository root on the device machine with
# the binaries (stripped `muser` and the `cuda` test binary as `cuda_test`) in $1, results in
# $OUT: parity; the L2 prefetch A/B; the bench (pp512/2048/8192, tg128 at depths 0, 4096,
# 32768); decode at depth 131072 with the KV bytes; `muser run` on a 1,022-token prompt; the
# serve load (tools/bench/serve_load.py, 1 and 8 clients, twice).
#   bash tools/bench/final_check.sh .device/DIR
P=$1
source tools/bench/with_model.sh 260
( time timeout 100 $P/cuda_test prefetch /tmp/g30.gguf 0 32768 ) > $OUT/prefetch.log 2>&1; echo "prefetch rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 90 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth131072.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
bash tools/bench/prompt_run.sh $P 40
bash tools/bench/serve_check.sh $P 60 2
