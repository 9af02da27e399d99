#!/bin/bash
# Round s, s7: the argmax over the grid (argmax_f32_grid, 256 blocks; was one block): parity
# (argmax cases), the host's share of a step (`cuda_test gap`) at depths 0 and 32768, and the
# bench. Binaries: .device/s7.
P=.device/s7
source tools/bench/with_model.sh 300
( time timeout 200 $P/cuda_test gap /tmp/g30.gguf 0 32768 ) > $OUT/gap.log 2>&1; echo "gap rc $?" >> $OUT/rc.txt
( time timeout 200 $P/muser bench -m /tmp/g30.gguf --device cuda -p 512 -n 128 -d 0,4096,32768 -r 5 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "FAIL|passed|argmax|mid_hd128.*(cuda session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-160 | tail -8
grep -E "^gap" $OUT/gap.log | cut -c1-120
grep -vE "^\s*$" $OUT/bench.log | tail -7 | head -5
