#!/bin/bash
# Round b, b4: the final check on main after round b (the engine's kernels as main's but the
# argmax's two extra outputs; the bench's tg loop fed on the device, CudaSession::greedy_fed):
# tools/bench/final_check.sh's steps, then the bench's tg with --step-sync (the loop before this
# round), `cuda_test rate` against main's build before the round (.device/b1) in turn, the
# host's share (gap), and the summary.
P=.device/b4
bash tools/bench/final_check.sh $P
( timeout 100 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0,32768 -r 5 --depth-fill synthetic --bandwidth 4280 --step-sync ) > $OUT/bench_sync.log 2>&1; echo "bench sync rc $?" >> $OUT/rc.txt
for d in .device/b1 $P; do echo "== $d" >> $OUT/rate.log; ( timeout 60 $d/cuda_test rate /tmp/g30.gguf 0 ) >> $OUT/rate.log 2>&1; done
( timeout 100 $P/cuda_test gap /tmp/g30.gguf 0 ) > $OUT/gap.log 2>&1
bash tools/bench/final_summary.sh
grep -E "tg128" $OUT/bench_sync.log
grep -E "^== |ab depth" $OUT/rate.log | cut -c1-90
grep gap $OUT/gap.log
