#!/bin/bash
# Diagnostic round: ncu on the attention and small kernels at depth 32768. Logs under $OUT.
P=.device/fuse
which ncu > $OUT/ncu_a.txt 2>&1 || ls /usr/local/cuda/bin >> $OUT/ncu_a.txt
NCU=$(which ncu || echo /usr/local/cuda/bin/ncu)
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
( timeout 150 $NCU --clock-control none $S -k regex:attend_group_128_4 --launch-skip 13 --launch-count 2 $P/cuda_test depth /tmp/g30.gguf 32768 ) >> $OUT/ncu_a.txt 2>&1
( timeout 150 $NCU --clock-control none $S -k regex:"attend_split_128|norm_tail_q8_cl|attend_merge_gate_q8|qk_norm_rope_store|swiglu_q8" --launch-skip 300 --launch-count 10 $P/cuda_test depth /tmp/g30.gguf 32768 ) > $OUT/ncu_b.txt 2>&1
( timeout 120 $NCU --clock-control none $S -k regex:mvq_seg_42_lb5 --launch-skip 400 --launch-count 4 $P/cuda_test depth /tmp/g30.gguf 32768 ) > $OUT/ncu_c.txt 2>&1
grep -E "attend_|norm_tail|qk_norm|swiglu|Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Memory Throughput|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued|Block Limit" $OUT/ncu_a.txt $OUT/ncu_b.txt $OUT/ncu_c.txt | head -150
