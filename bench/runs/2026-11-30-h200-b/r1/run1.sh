#!/bin/bash
# Round 1: kernel sweep + ncu, then the 30B session profile (A/B old vs segment kernels), then parity.
P=.device/perf
nvidia-smi > $OUT/smi.txt 2>&1
(which nsys ncu; ncu --version) > $OUT/tools.txt 2>&1
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1 &
SYN=$!
$P/cuda_test bw > $OUT/bw.log 2>&1
timeout 150 ncu --clock-control none -k regex:mvq_seg --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats $P/cuda_test ncu > $OUT/ncu.txt 2>&1
wait $SYN
timeout 200 $P/cuda_test /tmp/g30.gguf 32768 > $OUT/session.log 2>&1
timeout 200 $P/cuda_test > $OUT/cuda_test.log 2>&1
echo done >> $OUT/tools.txt
