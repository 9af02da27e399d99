#!/bin/bash
# Round s, s6: the host's share of a decode step (`cuda_test gap`): 100 steps of step_argmax
# waited for one by one (the bench's loop) against 100 steps queued ahead with and without the
# argmax kernel, at depths 0 and 32768; the event-timed profile of one step at depth 0.
# Binaries: .device/s6.
P=.device/s6
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 200 $P/cuda_test gap /tmp/g30.gguf 0 32768 ) > $OUT/gap.log 2>&1; echo "gap rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "^gap" $OUT/gap.log | cut -c1-120
