# Sourced by round d's run scripts (d2, d5) after their own runs: `muser bench` tg128 at depth 0
# of main's build before the round (.device/d1) and of the round's build ($P) in turn, twice,
# then the return codes and parity's summary lines ($1 of them).
for r in 1 2; do
  for m in .device/d1/muser $P/muser; do
    echo "== $m round $r" >> $OUT/bench.log
    ( timeout 60 $m bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --bandwidth 4280 ) >> $OUT/bench.log 2>&1
  done
done
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|tensor-core|greedy fed" $OUT/cuda_test.log | cut -c1-170 | tail -${1:-14}
