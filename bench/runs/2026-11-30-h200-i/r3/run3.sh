#!/bin/bash
# cuda-att round 3: the bench with the final default (tensor-core attention 16x2 on caches of
# at least 2,048 rows, 512 rows per split on long caches) and main's (.device/final2/muser).
P=.device/att
M=.device/final2/muser
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
B="bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280"
( time timeout 30 $P/muser $B ) > $OUT/bench_att.log 2>&1; echo "bench att rc $?" >> $OUT/rc.txt
( time timeout 30 $M $B ) > $OUT/bench_main.log 2>&1; echo "bench main rc $?" >> $OUT/rc.txt
