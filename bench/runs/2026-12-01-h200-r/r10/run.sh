#!/bin/bash
# Round r, r10: after the second review (the segment launches' size check and int8-row
# arguments through one helper each, host side only): parity. Binaries: .device/r10.
( time timeout 200 .device/r10/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" > $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst|mid_hd128.*(cuda session KL|cuda KL)|real" $OUT/cuda_test.log | cut -c1-170 | tail -14
