#!/bin/bash
# Round b, b7: after the review's refactor of greedy_fed (host code only): parity of the final
# build (.device/b7), then the host's share (gap, greedy_fed among its rows) at depth 0 and the
# bench's tg128 at depth 0 (fed, the default).
P=.device/b7
source tools/bench/with_model.sh 200
( timeout 80 $P/cuda_test gap /tmp/g30.gguf 0 ) > $OUT/gap.log 2>&1; echo "gap rc $?" >> $OUT/rc.txt
( timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|tensor-core|greedy fed" $OUT/cuda_test.log | cut -c1-170 | tail -14
grep gap $OUT/gap.log; grep tg128 $OUT/bench.log
