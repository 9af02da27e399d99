# Sourced by a round's run script on the device machine (repository root, $OUT set, P the
# folder of the stripped `muser` and `cuda_test`): generates the full-size 30B synthetic file at
# /tmp/g30.gguf while `cuda_test parity` runs, and waits for both (logs and return code under
# $OUT). The argument: the parity run's time limit in seconds.
#   P=.device/DIR; source tools/bench/with_model.sh 260
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
( time timeout ${1:?the parity time limit in seconds} $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
wait $SYN
