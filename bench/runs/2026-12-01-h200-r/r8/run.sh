#!/bin/bash
# Round r, r8: the tensor-core attention at 64 rows per split on the sliding rings
# (MmaAttn::split_rows_short, default 64 in this build; r7 ran 128): parity, the interleaved
# A/B (`cuda_test short`) at depths 0, 4096, 32768, the bench and decode at depth 131072.
# Binaries: .device/r8.
P=.device/r8
source tools/bench/with_model.sh 300
( time timeout 120 $P/cuda_test short /tmp/g30.gguf 0 4096 32768 ) > $OUT/short.log 2>&1; echo "short rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512,2048,8192 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
( time timeout 90 $P/cuda_test depth /tmp/g30.gguf 131072 ) > $OUT/depth131072.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|mid_hd128.*(f16|cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-170 | tail -9
grep -E "round" $OUT/short.log | cut -c1-100
grep -vE "^\s*$" $OUT/bench.log | tail -9 | head -7
grep -E "KV cache|^decode at" $OUT/depth131072.log | cut -c1-110 | head -3
