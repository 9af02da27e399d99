#!/bin/bash
# v8 (main): stage.cu and tmamv.cu rebuilt with the device's nvcc after the review moved their
# ring set-up into ring_init (device code was only checked with NVRTC here), and run.
( timeout 240 bash tools/bench/mvbw/run.sh $OUT/mvbw tmamv stage ) > $OUT/mvbw.log 2>&1; echo "mvbw rc $?" >> $OUT/rc.txt
cat $OUT/rc.txt
grep -E "FFN down .*RT  4|gate\+up.*RT 16|plain graph|staged CW 16 NS 3 RQ 16 RD 4 G 1/1 T 4/3 PF 4 SWZ true IL true  |error" $OUT/mvbw.log | head -12
