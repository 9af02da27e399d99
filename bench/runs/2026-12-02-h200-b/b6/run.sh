#!/bin/bash
# Round b, b6: the microbenchmarks after the plain read was shared (bench.cuh's rd_stream):
# mvbw.cu, lmflat.cu and rdpat.cu built with the device's nvcc; rdpat and lmflat run.
export PATH=$PATH:/usr/local/cuda/bin
cd tools/bench/mvbw
for b in mvbw lmflat rdpat; do
  nvcc -O3 -std=c++17 -arch=sm_90 -o $OUT/$b $b.cu > $OUT/$b.build.log 2>&1; echo "$b build rc $?" >> $OUT/rc.txt
done
for b in rdpat lmflat; do ( timeout 120 $OUT/$b ) > $OUT/$b.log 2>&1; echo "$b rc $?" >> $OUT/rc.txt; done
rm -f $OUT/mvbw $OUT/lmflat $OUT/rdpat
cat $OUT/rc.txt; cat $OUT/*.build.log | head -20
grep -E "round|warp-major, 1 trip|trip-major, 1 trip|plain" $OUT/rdpat.log | cut -c1-150
cat $OUT/lmflat.log | head -20
