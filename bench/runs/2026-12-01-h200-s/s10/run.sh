#!/bin/bash
# Round s, s10: the serve load (1 and 8 clients, temperature 0) with the faster host sampler
# (.device/s10/muser) and with s9's binary (.device/s10/muser_s9), in turn, twice each.
P=.device/s10
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
mkdir -p .device/s10/old && cp $P/muser_s9 .device/s10/old/muser
for r in 1 2; do
  for b in $P .device/s10/old; do
    echo "== $b round $r" >> $OUT/load.log
    bash tools/bench/serve_check.sh $b 60 1
  done
done
cat $OUT/rc.txt | tr '\n' ' '; echo
grep -E "^==|clients" $OUT/load.log | cut -c1-120
