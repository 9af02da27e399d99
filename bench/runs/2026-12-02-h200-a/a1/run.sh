#!/bin/bash
# Round a (2026-12-02), a1: main's build (1a9e10f) re-swept at depth 0 after round z's layouts:
# the L2 prefetch amounts (pfsweep), the matvec tail prefetch (tailsweep), and where the time
# goes (omit: each kernel class left out of every layer); interleaved A/B rounds of 100
# tokens as every round's.
P=.device/a1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
for m in pfsweep tailsweep omit; do
  ( time timeout 120 $P/cuda_test $m /tmp/g30.gguf 0 ) > $OUT/$m.log 2>&1; echo "$m rc $?" >> $OUT/rc.txt
done
