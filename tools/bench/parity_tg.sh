#!/bin/bash
# Sourced by a round's "main after the round" run script on the device machine (repository
# root, $OUT set, P the folder of the stripped `muser` and `cuda_test`): `cuda_test parity`
# while the 30B file is made (with_model.sh), then `muser bench` tg128 at depth 0, and the
# return codes and parity's summary lines.
#   P=.device/DIR; source tools/bench/parity_tg.sh
source tools/bench/with_model.sh 200
( timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|tensor-core|greedy fed" $OUT/cuda_test.log | cut -c1-170 | tail -14
grep tg128 $OUT/bench.log
