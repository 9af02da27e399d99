#!/bin/bash
# Round t, t4: the fused merge + output projection's variants (the cluster ones with the
# largest shared-memory carveout, and 4 x 128 rows in clusters): the per-kernel profile of
# each at depth 4096 (`cuda_test moprof`), then the interleaved A/B (`cuda_test mo`) at 4096
# and 32768 of those the device launches, then parity.
# Binaries: .device/t4.
P=.device/t4
( time $P/muser synth --preset 30b --out /tmp/g30.gguf -q ) > $OUT/synth.log 2>&1
( time timeout 150 $P/cuda_test moprof /tmp/g30.gguf 4096 ) > $OUT/moprof.log 2>&1; echo "moprof rc $?"
grep -E "==|profile" $OUT/moprof.log | grep -E "==|merge|norm_tail_cl1 mode 2 \+|attn_output|marks" | cut -c1-150
( time timeout 150 $P/cuda_test mo /tmp/g30.gguf 4096 32768 ) > $OUT/mo.log 2>&1; echo "mo rc $?"
grep -E "round|left out" $OUT/mo.log | cut -c1-120
( time timeout 200 $P/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "parity rc $?"
grep -E "FAIL|passed|merge_oproj op: worst|mid_hd128.*merge_oproj.*cl.*KL" $OUT/cuda_test.log | cut -c1-200 | tail -8
