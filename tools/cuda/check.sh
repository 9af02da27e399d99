#!/bin/bash
# Compiles every CUDA kernel without a GPU (NVRTC, then ptxas for sm_90) and fails on a
# compile error, a ptxas error (e.g. more than 48 KB of static shared memory) or a register
# spill. Needs the pip wheels nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvcc-cu12 (NVRTC and
# ptxas); give their site-packages as SITE (default: the reference venv's).
#   bash tools/cuda/check.sh [SITE]
set -euo pipefail
SITE=${1:-/root/refvenv/lib/python3.11/site-packages}
NVRTC=$SITE/nvidia/cuda_nvrtc/lib
PTXAS=$SITE/nvidia/cuda_nvcc/bin/ptxas
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# The NVRTC wheel ships libnvrtc.so.12 only; cudarc opens libnvrtc.so.
LIBS=$OUT/lib
mkdir -p "$LIBS"
for f in "$NVRTC"/*; do ln -s "$f" "$LIBS/"; done
[ -e "$LIBS/libnvrtc.so" ] || ln -s "$NVRTC/libnvrtc.so.12" "$LIBS/libnvrtc.so"
LD_LIBRARY_PATH=$LIBS cargo run --release -q -p muser-engine --example cuda_compile_check -- 90 "$OUT"
status=0
for ptx in "$OUT"/*.ptx; do
    log=$("$PTXAS" -arch=sm_90 -v "$ptx" -o "$OUT/x.cubin" 2>&1) || { echo "$log" | grep -i error; status=1; continue; }
    if echo "$log" | grep -E "[1-9][0-9]* bytes spill (stores|loads)" >/dev/null; then
        echo "$(basename "$ptx"): register spills:"
        echo "$log" | grep -B3 -E "[1-9][0-9]* bytes spill" | grep -E "Compiling|spill"
        status=1
    fi
done
[ $status -eq 0 ] && echo "ptxas sm_90: every kernel fits, no spills"
exit $status
