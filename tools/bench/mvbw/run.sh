#!/bin/bash
# Builds the matvec microbenchmarks with the device's nvcc and runs them:
#   bash tools/bench/mvbw/run.sh OUTDIR [mvbw] [chain] [q6k] [barrier] [splitk] [stage] [tmamv]
#   [forkffn] [ffnfuse] [normfold] [lmflat] [ilv] [rdpat]
#   (default: the first two). Each NAME is NAME.cu here: mvbw (matvec variants, read
#   ceilings), chain (one token's kernel chain: graph, PDL, persistent), q6k (split-Q6_K work
#   splits), barrier (one grid-wide barrier, four ways), splitk (the matvecs' K range split
#   over blocks), stage (the token's weights staged through shared memory by a persistent
#   kernel that never waits for activations to load them), tmamv (one matvec per launch
#   with its weights staged through shared memory by cp.async.bulk, against the engine's),
#   forkffn (chain.cu's token with the FFN, and the attention block, in pieces on parallel
#   graph branches), ffnfuse (the FFN as one launch: clusters of 8, the down projection as
#   per-cluster partial sums added as fixed point), normfold (the norm tails folded into the
#   next matvec launch as a cluster prologue), lmflat (the LM head with four 4-row units per
#   warp as one stream of columns), ilv (the Q4_K matvecs over weights re-laid so that a
#   warp's loop trip reads one contiguous run), rdpat (read ceilings of the matvecs' tile
#   orders, loads only: warp-major, trip-major, block-major, a plain grid-stride read).
set -euo pipefail
OUT=${1:-/tmp/mvbw}
shift || true
WHAT=${*:-mvbw chain}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
for b in $WHAT; do
    nvcc -O3 -std=c++17 -arch=sm_90 -o "$OUT/$b" "$b.cu" 2>&1 | tee "$OUT/$b.build.log"
    "$OUT/$b" | tee "$OUT/$b.log"
done
