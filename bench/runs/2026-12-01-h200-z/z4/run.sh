#!/bin/bash
# Round z, z4 (diagnostics on the z2 build, .device/z4): is decode power- or clock-limited
# (nvidia-smi sampled every 50 ms during tg at depth 0 and 32768: SM/memory clocks, power
# against its limit, the active clock-event reasons); each kernel's in-graph duration and the
# gaps between them (nsys with --cuda-graph-trace=node, 16 tokens at depth 0); then z3's
# A/B (the LM head flat against the segment kernel on the new Q6_K layout).
P=.device/z4
set -u
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE,TEMPERATURE > $OUT/smi_q.txt 2>&1
which nsys ncu > $OUT/tools.txt 2>&1; nsys --version >> $OUT/tools.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
SMI=$!
( timeout 120 $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 1024 -d 0,32768 -r 3 --depth-fill synthetic --bandwidth 4280 ) > $OUT/bench_long.log 2>&1
kill $SMI
if which nsys > /dev/null 2>&1; then
  ( timeout 150 nsys profile -t cuda --cuda-graph-trace=node -o /tmp/tr --force-overwrite true $P/muser bench -m /tmp/g30.gguf --device cuda -p 0 -n 16 -r 1 -d 0 ) > $OUT/nsys.log 2>&1
  ( timeout 120 nsys stats -r cuda_gpu_trace -f csv -o /tmp/trace /tmp/tr.nsys-rep ) >> $OUT/nsys.log 2>&1
  ls /tmp/trace* >> $OUT/nsys.log 2>&1
  python3 - <<'PY' >> $OUT/nsys.log 2>&1
import csv, glob, os, gzip
f = glob.glob('/tmp/trace*.csv')[0]
rows = list(csv.DictReader(open(f)))
print(len(rows), 'rows; columns', list(rows[0].keys()))
# The last 2,000 kernel rows (the tg tokens), gzip'd for the trip back.
with gzip.open(os.environ['OUT'] + '/trace_tail.csv.gz', 'wt') as g:
    w = csv.DictWriter(g, fieldnames=list(rows[0].keys())); w.writeheader(); w.writerows(rows[-3000:])
PY
fi
( timeout 150 $P/cuda_test lmflat /tmp/g30.gguf 0 32768 ) > $OUT/lmflat.log 2>&1
grep -v "^profile" $OUT/lmflat.log | grep -E "ab depth|differ" | cut -c1-150
tail -8 $OUT/bench_long.log
python3 -c "
import csv
r=list(csv.reader(open('$OUT/smi.csv')))[1:]
print(len(r),'samples'); print('\n'.join(','.join(x) for x in r[::max(1,len(r)//25)]))"
head -5 $OUT/nsys.log; cat $OUT/tools.txt
