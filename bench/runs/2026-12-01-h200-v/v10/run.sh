#!/bin/bash
# v10 (main): the tensor-core attention's rows per split on the long caches (the full layers
# at depth) at 256 and 1,024 against the default's 512, now that the merge takes many splits
# cheaply (section 4); interleaved A/B at depths 32,768 and 131,072.
P=.device/v10
( $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( timeout 200 $P/cuda_test long /tmp/g30.gguf 32768 131072 ) > $OUT/long.log 2>&1; echo "long rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "ab depth" $OUT/long.log
