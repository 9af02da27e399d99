#!/bin/bash
# Round z, z10: parity of main's final build (.device/z10: after z9 only the host-side
# file_copy refactor of seg.rs and docs changed), the summary lines.
( time timeout 300 .device/z10/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?"
grep -E "FAIL|passed|worst NMSE|streams|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-160 | tail -12
