#!/bin/bash
# v6: the cluster barriers that only keep shared memory alive split into arrive (after the
# reads) and wait (before the block leaves): the norm tails' last barrier and the folded
# QK-norm's second. Parity on the new build; then the two builds in turn (.device/v6/base:
# main at v5 + `cuda_test rate`; .device/v6: the split barriers), decode rates at depths 0,
# 4,096 and 32,768, twice each; logits digests of both (the same bits expected).
P=.device/v6; source tools/bench/with_model.sh 300
for r in 1 2; do
  for b in base new; do
    B=$P; [ $b = base ] && B=$P/base
    ( timeout 100 $B/cuda_test rate /tmp/g30.gguf 0 4096 32768 ) > $OUT/rate-$b-$r.log 2>&1; echo "rate $b $r rc $?" >> $OUT/rc.txt
  done
done
( timeout 60 $P/base/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest-base.log 2>&1
( timeout 60 $P/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest-new.log 2>&1
cat $OUT/rc.txt
grep -E "passed" $OUT/cuda_test.log | tail -2
for f in $OUT/rate-*.log; do echo "$(basename $f)"; grep "ab depth" $f; done
grep digest $OUT/digest-*.log
