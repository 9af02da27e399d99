#!/bin/bash
# Round b, b3: the gate/up streams trip-major (common.cuh's q4g_tile: tile j of every stream
# side by side; the same bits) and greedy decode fed on the device (CudaSession::greedy_fed,
# the bench's tg loop: the argmax writes the next step's token into its parameters, the host
# queues the steps). Parity of the new build (.device/b3/new); logits digests of main
# (.device/b1) and of the new build at depths 0, 4096, 32768; `cuda_test rate` with the two
# builds in turn, twice; the host's share (gap) of the new build; `muser bench` tg128 at
# depths 0 and 32768 with the new build's default (fed) and --step-sync, and main's.
B=.device/b1
P=.device/b3/new
source tools/bench/with_model.sh 300
for b in base new; do d=$P; [ $b = base ] && d=$B; ( timeout 60 $d/cuda_test digest /tmp/g30.gguf 0 4096 32768 ) > $OUT/digest_$b.log 2>&1; done
for i in 1 2; do for d in $B $P; do echo "== $d" >> $OUT/rate.log; ( timeout 60 $d/cuda_test rate /tmp/g30.gguf 0 32768 ) >> $OUT/rate.log 2>&1; done; done
( timeout 100 $P/cuda_test gap /tmp/g30.gguf 0 ) > $OUT/gap.log 2>&1
for v in "$B/muser" "$P/muser" "$P/muser --step-sync"; do
  echo "== $v" >> $OUT/bench.log
  set -- $v
  ( timeout 100 $1 bench $2 -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) >> $OUT/bench.log 2>&1
done
cat $OUT/rc.txt
grep -E "FAIL|passed|greedy fed" $OUT/cuda_test.log | tail -12 | cut -c1-200
diff <(grep -i digest $OUT/digest_base.log) <(grep -i digest $OUT/digest_new.log) > /dev/null && echo "digests new = base"
grep -E "^== |ab depth" $OUT/rate.log | cut -c1-90
grep gap $OUT/gap.log
grep -E "^== |tg128" $OUT/bench.log
