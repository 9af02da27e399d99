#!/bin/bash
# CPU batched decode on the device host's 16 cores: split policies and thread counts, then the HTTP load test.
P=.device/cpu5
(lscpu; nproc; free -g) > $OUT/host.txt 2>&1
$P/muser synth --preset tiny --out /tmp/tiny.gguf -q
for t in 16 8 4 2; do for sp in auto always never; do
  echo "== threads $t split $sp"
  timeout 60 $P/muser bench -m /tmp/tiny.gguf --device cpu -p 0 -n 128 --streams 1,2,4,8,16 -r 3 -t $t --split $sp 2>&1 | tail -6
done; done > $OUT/cpu_bench.log 2>&1
for sp in always auto; do
  timeout 120 python3 tools/loadtest/loadtest.py --muser $P/muser --device cpu --split $sp --seconds 20 --scale-seconds 8 --out $OUT/loadtest-$sp.md > $OUT/loadtest-$sp.log 2>&1
  echo "loadtest $sp rc $?" >> $OUT/rc.txt
done
