# Sourced by a round's run script on the device machine (repository root, $OUT set, P the
# folder of the stripped `muser` and `cuda_test`): generates the full-size 30B synthetic file at
# /tmp/g30.gguf while `cuda_test parity` runs, and waits for both (logs and return code under
# $OUT).
#   P=.device/DIR; source tools/bench/with_model.sh
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout 260 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
