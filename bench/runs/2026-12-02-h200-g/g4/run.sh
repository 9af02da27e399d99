#!/bin/bash
# Round g, g4: g3's attention + output projection launch with the projection blocks polling
# their flag with relaxed loads (one fence after) instead of acquire loads: parity, `cuda_test
# aoproj` at depths 0 and 32768, the profile labels (the fused launch event-timed), tg128.
P=.device/g4
source bench/runs/2026-12-02-h200-e/flip.sh aoproj
grep -E "attention \+ output projection as one" $OUT/cuda_test.log | cut -c1-140
