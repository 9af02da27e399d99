#!/bin/bash
# Check of main after merging cuda-swiglu (and the CPU split policy): CPU figures on the host's
# 16 cores first (nothing else running), the HTTP load test, then GPU parity and the bench.
P=.device/final2
(lscpu; nproc) > $OUT/host.txt 2>&1
$P/muser synth --preset tiny --out /tmp/tiny.gguf -q
$P/muser synth --preset tiny --hidden 512 --heads 8 --ffn 1024 --layers 8 --out /tmp/m12.gguf -q
{
for t in 16 8; do echo "== tiny threads $t split auto"; timeout 60 $P/muser bench -m /tmp/tiny.gguf --device cpu -p 0 -n 128 --streams 1,8 -r 5 -t $t 2>&1 | tail -4; done
for sp in auto always never; do echo "== m12 threads 16 split $sp"; timeout 60 $P/muser bench -m /tmp/m12.gguf --device cpu -p 0 -n 64 --streams 1,2,4,8,16 -r 3 -t 16 --split $sp 2>&1 | tail -7; done
} > $OUT/cpu_bench.log 2>&1
timeout 150 python3 tools/loadtest/loadtest.py --muser $P/muser --device cpu --out $OUT/loadtest-64x60s.md > $OUT/loadtest.log 2>&1; echo "loadtest rc $?" >> $OUT/rc.txt
source tools/bench/with_model.sh 240
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
