# Sourced by this round's cN/run.sh on the device (repository root, $OUT and P set, the 30B
# file at /tmp/g30.gguf): `cuda_test fattn` at depth 0, then the call's report (parity's
# lines where it ran).
( time timeout 150 $P/cuda_test fattn /tmp/g30.gguf 0 ) > $OUT/fattn_0.log 2>&1; echo "fattn rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
if [ -f $OUT/cuda_test.log ]; then
  grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)|attention folded|greedy fed" $OUT/cuda_test.log | cut -c1-200 | tail -20
fi
grep -v "^$" $OUT/fattn_0.log | tail -22
