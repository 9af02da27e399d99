#!/bin/bash
# Round b (2026-12-02), b1: main's build (28ec3ad): where the time goes at depths 0 and 32,768
# (`cuda_test omit`, with round a's new case "qk-norm (plain qkvg)": the plain Q/K/V/gate
# launch and no QK-norm anywhere, the most moving the QK-norm into the attention could save).
P=.device/b1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
for d in 0 32768; do
  ( time timeout 200 $P/cuda_test omit /tmp/g30.gguf $d ) > $OUT/omit_$d.log 2>&1; echo "omit $d rc $?" >> $OUT/rc.txt
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/smi.txt 2>&1
