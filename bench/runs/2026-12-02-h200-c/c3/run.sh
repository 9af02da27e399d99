#!/bin/bash
# Round c, c3: c2's fold (it did apply on the 30B file: 616 resident blocks against 560) was
# 0.6 % slower, and its kernel spilled 12 bytes. Here the lead block's attention is a
# __noinline__ call (its registers apart from the matvec loop's: no spills anywhere), the
# same bits: `cuda_test fattn` at depth 0 only.
P=.device/c3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
source bench/runs/2026-12-02-h200-c/fattn.sh
