#!/bin/bash
# Round b, b2: the read ceilings of the matvecs' tile orders (tools/bench/mvbw/rdpat.cu: loads
# only, warp-major as the engine's layouts vs trip-major vs a plain grid-stride read), and the
# host's share of a step at depth 0 (`cuda_test gap`, main's build .device/b1).
P=.device/b1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
bash tools/bench/mvbw/run.sh $OUT rdpat > $OUT/rdpat.out 2>&1
wait
( time timeout 200 $P/cuda_test gap /tmp/g30.gguf 0 ) > $OUT/gap.log 2>&1; echo "gap rc $?" >> $OUT/rc.txt
