#!/bin/bash
# A round's usual device call, run from the repository root on the device machine with the
# binaries in $P (stripped `muser` and the `cuda` test binary as `cuda_test`), results in $OUT:
# `cuda_test parity` while the full-size model is generated (with_model.sh), then the A/B mode
# MODE of `cuda_test` at the depths, and a summary: the return codes, the parity lines that
# match PATTERN (besides failures, totals and the mid-size model's bars), the A/B rounds.
#   P=.device/DIR; source tools/bench/parity_ab.sh MODE TIMEOUT PATTERN DEPTH...
MODE=$1 LIMIT=$2 PATTERN=$3
shift 3
source tools/bench/with_model.sh 300
( time timeout "$LIMIT" $P/cuda_test "$MODE" /tmp/g30.gguf "$@" ) > $OUT/$MODE.log 2>&1; echo "$MODE rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|worst|$PATTERN|mid_hd128.*(f16|cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-200 | tail -14
grep -E "round|logits" $OUT/$MODE.log | cut -c1-120
