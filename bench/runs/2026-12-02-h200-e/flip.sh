# Sourced by round e's e1 and e3 run scripts (P the build's folder, $1 the cuda_test A/B mode
# that flips the round's option): parity with the option on (while the 30B file is made), the
# A/B at depths 0 and 32768, the profile labels at depth 0, `muser bench` tg128 at depth 0, then
# the return codes and the summary lines. (Shared since the runs: e1's and e3's scripts held
# these lines themselves, e1's summary greps also the tensor-core and greedy-fed lines.)
source tools/bench/with_model.sh 200
( timeout 200 $P/cuda_test $1 /tmp/g30.gguf 0 32768 ) > $OUT/$1.log 2>&1; echo "$1 rc $?" >> $OUT/rc.txt
( timeout 60 $P/cuda_test depth /tmp/g30.gguf 0 ) > $OUT/depth.log 2>&1; echo "depth rc $?" >> $OUT/rc.txt
( timeout 60 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 128 -d 0 -r 5 --bandwidth 4280 ) > $OUT/bench.log 2>&1; echo "bench rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FAIL|passed|worst NMSE [0-9.e-]+ \(tol|mid_hd128.*(session KL|cuda KL)" $OUT/cuda_test.log | cut -c1-170 | tail -16
grep -E "^ab|differ" $OUT/$1.log | cut -c1-160
grep -E "profile (mv attn_output|mv ffn_down|norm_tail)" $OUT/depth.log | head -6
grep tg128 $OUT/bench.log
