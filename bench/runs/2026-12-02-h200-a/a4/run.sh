#!/bin/bash
# Round a, a4: a3's change in its final form (every exchange of the norm tails by pushes, the
# pull functions gone, the first push of a launch waiting for the cluster's set-up). Parity of
# the new build (.device/a4/new); logits digests of main (.device/a4/base) and of the new build
# (twice) at depths 0, 4096, 32768; `cuda_test rate` with the two builds in turn, twice, at
# depths 0 and 32768; the per-kernel profile of each at depth 0.
bash bench/runs/2026-12-02-h200-a/a3/run.sh .device/a4
