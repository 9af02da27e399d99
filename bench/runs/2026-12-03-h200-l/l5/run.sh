#!/bin/bash
# Round l, l5: the final HEAD (l4's kernels; host-side review commits after it): parity and
# the kernel bandwidth of the changed types.
P=.device/l5
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
( time timeout 60 $P/cuda_test bw ) > $OUT/bw.log 2>&1; echo "bw rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|(q5k|q8|mid_hd128).*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-200 | tail -26
grep -E "^bandwidth (Q5_K|Q8_0|F16|BF16) " $OUT/bw.log
