#!/bin/bash
# u13 (branch cuda-persist): the phase times with and without the products (tiles released
# unread: the stream's and the latency-bound phases' share). No parity (no numerics changed
# from u12 but an experiment flag); the synthetic file alone.
P=.device/u13
( $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 100 $P/cuda_test ptrace /tmp/g30.gguf 0 ) > $OUT/ptrace.log 2>&1; echo "ptrace rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
cat $OUT/ptrace.log | grep trace
