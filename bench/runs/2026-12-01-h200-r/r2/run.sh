#!/bin/bash
# Round r, r2: r1 (f16-only products and the cluster-merged tensor-core attention) with the
# cluster merge reading the other blocks' partials as plain loads of mapped addresses and
# the partials sized for whole clusters: parity, then `cuda_test mmar` at depths 4096, 32768.
# Binaries: .device/r2.
bash bench/runs/2026-12-01-h200-r/r1/run.sh .device/r2
