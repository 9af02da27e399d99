#!/bin/bash
# Round w, call 4: why the single-stream step read 2.5 % slower after w3's first round
# (`cuda_test pieces_diag`: the default twice, side streams made but unused, 6 pieces, the
# default again; interleaved, 4 rounds) at depths 0 and 32,768.
P=.device/w3
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 300 $P/cuda_test pieces_diag /tmp/g30.gguf 0 32768 ) > $OUT/diag.log 2>&1; echo "diag rc $?"
grep -E "ab depth" $OUT/diag.log
