#!/bin/bash
# Round t, t3: the fused merge + output projection with the merge's loads issued before the
# weights' copies, and its cluster variant (4 heads x 256 rows, clusters of 8 head groups sum
# the parts in the launch): parity, the interleaved A/B (`cuda_test mo`) at depths 4096 and
# 32768, the per-kernel profile at 4096 (`cuda_test moprof`).
# Binaries: .device/t3.
P=.device/t3
source tools/bench/parity_ab.sh mo 200 'merge_oproj op: worst|mid_hd128.*merge_oproj.*KL' 4096 32768
( time timeout 100 $P/cuda_test moprof /tmp/g30.gguf 4096 ) > $OUT/moprof.log 2>&1; echo "moprof rc $?"
grep -E "==|profile" $OUT/moprof.log | grep -E "==|merge|norm_tail_cl1 mode 2 \+|attn_output|marks" | cut -c1-150
