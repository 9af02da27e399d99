#!/bin/bash
# Round h, h1: the attention's window as kernel arguments written into the captured graphs'
# attention nodes before each replay (DecodeTuning::attn_window_args, on in this build):
# parity (the flag on everywhere; the flips list runs it off), `cuda_test window` at depths 0
# and 32768 (interleaved A/B against the window read from the step's parameters), the profile
# labels, tg128.
P=.device/h1
source bench/runs/2026-12-02-h200-e/flip.sh window
grep -E "window args|window as arguments" $OUT/cuda_test.log | cut -c1-160 | head -12
