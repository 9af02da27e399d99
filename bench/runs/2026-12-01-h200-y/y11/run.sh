#!/bin/bash
# Round y, y11: parity after review (the flat loops' shared unit completion, the shared
# one-matrix/flat launch helper): cuda_test parity only.
( time timeout 200 .device/y11/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?"
grep -E "FAIL|passed|worst|mid_hd128.*cuda (session )?KL|LM head flat|one-matrix" $OUT/cuda_test.log | cut -c1-150 | tail -24
