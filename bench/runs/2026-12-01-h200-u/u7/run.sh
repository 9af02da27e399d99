#!/bin/bash
# u7 (branch cuda-persist): the persistent layer kernel's first device run: parity (its
# session checks on every parity model among the others), then its A/B against the graph on
# the full-size file at depths 0 and 4096.
P=.device/u7
source tools/bench/with_model.sh 300
( timeout 200 $P/cuda_test persist /tmp/g30.gguf 0 4096 ) > $OUT/persist.log 2>&1; echo "persist rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "persist|FAIL|passed" $OUT/cuda_test.log | cut -c1-200 | tail -40
grep -E "persist|graph|decode|logits" $OUT/persist.log | cut -c1-200 | head -30
