// The per-head split-K attention of one decode step (`attend_head`) and the row loaders it
// shares with the grouped kernel; prepended (after common.cuh) to the decode module, whose
// `attend_split_*` kernels it is, and to the matvec module, whose Q/K/V/gate launch can
// finish with it (mvq1.cu seg_qkva).

// Stages the K rows of a 32-row chunk (row r = slot of lane r, rows c0 + r < j1 only) in
// this warp's shared rows `ks` (HD / 8 + 1 uint4 each: the padding spreads a lane's row over
// the banks), so that lane r then reads its own row from shared memory. Each global load
// instruction covers whole rows (32 lanes × 16 bytes); one row per lane straight from global
// memory made every load instruction touch 32 lines, and the L1 was the bottleneck (65 % busy,
// 11 µs per sliding layer and 55 µs per full layer at depth 32768, ncu on the H200).
template <int HD>
__device__ __forceinline__ void stage_k_rows(uint4 (*ks)[HD / 8 + 1], const u16 *kc, int slot,
                                             int kv_dim, int kvh, int c0, int j1) {
    const int lane = threadIdx.x & 31;
    __syncwarp();
    // cp.async (sm_80+): global to shared without registers.
#pragma unroll 8
    for (int i = 0; i < HD / 8; i++) {
        const int e = i * 32 + lane, r = e / (HD / 8), c = e % (HD / 8);
        const int sl = __shfl_sync(0xffffffffu, slot, r);
        if (c0 + r < j1) {
            const uint4 *src = (const uint4 *)(kc + (size_t)sl * kv_dim + kvh * HD) + c;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            unsigned long long dst;
            asm("cvta.to.shared.u64 %0, %1;" : "=l"(dst) : "l"((unsigned long long)&ks[r][c]));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((u32)dst), "l"(src)
                         : "memory");
#else
            ks[r][c] = *src;
#endif
        }
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
    __syncwarp();
}

// With `fin` (the folded merge's output, gate and int8 row: see fold_merge) and one split,
// the block finishes its head itself: the merge of one split is acc · (1 / sum) (the split's
// weight exp(m - m) is 1), then the gate and the quantization, in attend_merge_gate_q8's
// operations, so the same bits without the round trip through the partials and the block
// reductions. Returns whether it did.
struct MergeOut {
    float *out;
    const float *g;
    signed char *qa;
    float *da;
    float *sa;
};

// The V values a lane needs of the 32 cache rows whose slots the warp's lanes hold (lane jj:
// row `slot`): its D = HD / 32 halves of each row, two to a u32 (the per-head and grouped
// attention kernels' P · V step). NR rows from row j0 (vv[jj] is row j0 + jj).
template <int HD, int NR = 32>
__device__ __forceinline__ void load_v_rows(u32 (*vv)[(HD / 32 + 1) / 2], const u16 *vc,
                                            int slot, int kv_dim, int kvh, int j0 = 0) {
    constexpr int D = HD / 32;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int jj = 0; jj < NR; jj++) {
        const int sl = __shfl_sync(0xffffffffu, slot, j0 + jj);
        const u16 *vr = vc + (size_t)sl * kv_dim + kvh * HD + lane * D;
        if (D == 2) {
            vv[jj][0] = *(const u32 *)vr;
        } else if (D == 4) {
            const uint2 t = *(const uint2 *)vr;
            vv[jj][0] = t.x;
            vv[jj][(D + 1) / 2 - 1] = t.y;
        } else {
            const uint4 t = *(const uint4 *)vr;
            vv[jj][0] = t.x;
            vv[jj][1 % ((D + 1) / 2)] = t.y;
            vv[jj][2 % ((D + 1) / 2)] = t.z;
            vv[jj][3 % ((D + 1) / 2)] = t.w;
        }
    }
}

// Split-K flash-decode attention, first pass: block (h, s) runs an online softmax over its
// share of the window's rows (oldest first: row j of the window is slot (first + j) % cap) and
// writes (max, sum, unnormalised output[hd]) to `part[(h * n_split + s) * (hd + 2)]`.
//
// Each warp takes 32 rows at a time. Scores: lane l takes row c0 + l whole (HD / 8 16-byte K
// loads, all issued before any use; q from shared memory); the chunk's softmax update is one
// warp max and one warp sum. Values: lane l owns output dimensions [l * D, l * D + D) (D =
// HD / 32) and reads them from all 32 rows of the chunk (one 2-8-byte load per row, all
// issued before any use). Two memory round trips per 32 rows; walking one row at a time (a
// dependent load, a warp reduction and two exps per row) measured 13 µs per layer at depth 0
// and 110 µs at depth 32768 on the H200. The four warps' partials are merged through shared
// memory. Empty shares write max = -3e38, sum = 0.
//
// L1PRE: before anything else, each lane asks L1 for the K and V rows of its first chunk and
// the block for its head's gate values (prefetch.global.L1), so that the V and gate loads,
// which wait behind the K phase, find them there (DecodeTuning::attn_l1_prefetch).
// Head h, split s of n_split (the kernels' blockIdx.x, blockIdx.y, gridDim.y: attend_split_hd).
// QSM: `q` is the head's HD values in shared memory, written before a barrier by the caller
// (seg_qkva), instead of all heads' in global memory.
template <int HD, bool L1PRE = false, bool QSM = false>
__device__ __forceinline__ bool attend_head(const float *q, const u16 *kc, const u16 *vc,
                                            float *part, int n_head, int n_head_kv,
                                            const int *meta, int cap, float scale,
                                            const MergeOut *fin, int h, int s, int n_split) {
    constexpr int D = HD / 32, VB = 32, KB = QSM && HD >= 128 ? HD / 16 : HD / 8;
    __shared__ __align__(16) float qsh[QSM ? 1 : HD];
    const float *qs = QSM ? q : qsh;
    __shared__ float wm[4], wsum[4];
    __shared__ float wo[4][HD];
    // K rows straight from global memory here: staging them (stage_k_rows, as the grouped
    // kernel does) measured no faster at 2,048 rows (13.7 vs 13.5 µs) and slower at depth 0.
    constexpr bool KS = false;
    __shared__ uint4 ks[KS ? 4 : 1][KS ? 32 : 1][HD / 8 + 1];
    const int first = meta[0], n = meta[1];
    const int kvh = h / (n_head / n_head_kv);
    const int kv_dim = n_head_kv * HD;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (L1PRE) {
        const int per0 = (n + n_split - 1) / n_split;
        const int j = s * per0 + 32 * warp + lane;
        if (j < min(n, s * per0 + per0)) {
            const size_t off = (size_t)((first + j) % cap) * kv_dim + kvh * HD;
#pragma unroll
            for (int b = 0; b < HD * 2; b += 128) {
                asm volatile("prefetch.global.L1 [%0];" ::"l"((const u8 *)(kc + off) + b));
                asm volatile("prefetch.global.L1 [%0];" ::"l"((const u8 *)(vc + off) + b));
            }
        }
        if (fin && (int)threadIdx.x < HD / 32)
            asm volatile("prefetch.global.L1 [%0];" ::"l"(fin->g + h * HD + 32 * threadIdx.x));
    }
    // (Loading q before the window, for the two latencies to overlap, measured 1.5 % slower at
    // depth 0: 200.0 → 197.1 tok/s, this kernel 7.5 → 9.4 µs event-timed; h200-r r6.)
    if (!QSM) {
        for (int i = threadIdx.x; i < HD; i += blockDim.x) qsh[i] = q[h * HD + i];
        __syncthreads();
    }
    const int per = (n + n_split - 1) / n_split;
    const int j0 = s * per, j1 = min(n, j0 + per);
    float m = -3.0e38f, sum = 0.0f;
    float o[D];
#pragma unroll
    for (int k = 0; k < D; k++) o[k] = 0.0f;
    for (int c0 = j0 + 32 * warp; c0 < j1; c0 += 128) {
        const int j = c0 + lane;
        const bool valid = j < j1;
        const int slot = (first + (valid ? j : c0)) % cap;
        float d = -3.0e38f;
        if (KS) stage_k_rows<HD>(ks[warp], kc, slot, kv_dim, kvh, c0, j1);
        if (valid) {
            const uint4 *kr = (const uint4 *)(kc + (size_t)slot * kv_dim + kvh * HD);
            // With QSM (the Q/K/V/gate launch's registers), the row in KB-load halves: the
            // same sum in the same order.
            float acc = 0.0f;
#pragma unroll
            for (int c0 = 0; c0 < HD / 8; c0 += KB) {
                uint4 kv[KB];
#pragma unroll
                for (int c = 0; c < KB; c++)
                    kv[c] = KS ? ks[KS ? warp : 0][KS ? lane : 0][c0 + c] : kr[c0 + c];
#pragma unroll
                for (int c = 0; c < KB; c++) {
                    const float4 qa = *(const float4 *)&qs[8 * (c0 + c)];
                    const float4 qb = *(const float4 *)&qs[8 * (c0 + c) + 4];
                    acc += qa.x * h2f((u16)(kv[c].x & 0xFFFF)) +
                           qa.y * h2f((u16)(kv[c].x >> 16)) +
                           qa.z * h2f((u16)(kv[c].y & 0xFFFF)) +
                           qa.w * h2f((u16)(kv[c].y >> 16)) +
                           qb.x * h2f((u16)(kv[c].z & 0xFFFF)) +
                           qb.y * h2f((u16)(kv[c].z >> 16)) +
                           qb.z * h2f((u16)(kv[c].w & 0xFFFF)) + qb.w * h2f((u16)(kv[c].w >> 16));
                }
            }
            d = acc * scale;
        }
        float cm = d;
        for (int off = 16; off > 0; off >>= 1) cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, off));
        const float nm = fmaxf(m, cm);
        const float corr = expf(m - nm);
        const float p = valid ? expf(d - nm) : 0.0f;
        sum = sum * corr + warp_sum(p);
#pragma unroll
        for (int k = 0; k < D; k++) o[k] *= corr;
        // Rows past the share have p = 0 and read row c0 (always valid memory). With QSM (the
        // Q/K/V/gate launch's registers), VB rows' values at a time: the same sums in the
        // same order.
#pragma unroll
        for (int v0 = 0; v0 < 32; v0 += VB) {
            u32 vv[VB][(D + 1) / 2];
            load_v_rows<HD, VB>(vv, vc, slot, kv_dim, kvh, v0);
#pragma unroll
            for (int jj = 0; jj < VB; jj++) {
                const float pj = __shfl_sync(0xffffffffu, p, v0 + jj);
#pragma unroll
                for (int k = 0; k < D; k++) {
                    const u32 w2 = vv[jj][k / 2];
                    o[k] += pj * h2f((u16)(k % 2 ? w2 >> 16 : w2 & 0xFFFF));
                }
            }
        }
        m = nm;
    }
    if (lane == 0) {
        wm[warp] = m;
        wsum[warp] = sum;
    }
#pragma unroll
    for (int k = 0; k < D; k++) wo[warp][lane * D + k] = o[k];
    __syncthreads();
    float bm = fmaxf(fmaxf(wm[0], wm[1]), fmaxf(wm[2], wm[3]));
    if (fin && n_split == 1) {
        float bs = 0.0f;
        for (int w = 0; w < 4; w++) bs += wsum[w] * expf(wm[w] - bm);
        const float inv = 1.0f / bs;
        for (int base = threadIdx.x & ~31; base < HD; base += blockDim.x) {
            const int i = base + lane;
            float a = 0.0f;
            if (i < HD) {
                float acc = 0.0f;
                for (int w = 0; w < 4; w++) acc += wo[w][i] * expf(wm[w] - bm);
                a = acc * inv;
                a *= 1.0f / (1.0f + expf(-fin->g[h * HD + i]));
                fin->out[h * HD + i] = a;
            }
            if (fin->qa) quant_block32(a, (h * HD + base) >> 5, fin->qa, fin->da, fin->sa);
        }
        return true;
    }
    float *out = part + ((size_t)h * n_split + s) * (HD + 2);
    for (int i = threadIdx.x; i < HD; i += blockDim.x) {
        float acc = 0.0f;
        for (int w = 0; w < 4; w++) acc += wo[w][i] * expf(wm[w] - bm);
        out[2 + i] = acc;
    }
    if (threadIdx.x == 0) {
        float bs = 0.0f;
        for (int w = 0; w < 4; w++) bs += wsum[w] * expf(wm[w] - bm);
        out[0] = bm;
        out[1] = bs;
    }
    return false;
}

// attend_head for the block's own head and split (the attention kernels' grid).
template <int HD, bool L1PRE = false>
__device__ __forceinline__ bool attend_split_hd(const float *q, const u16 *kc, const u16 *vc,
                                                float *part, int n_head, int n_head_kv,
                                                const int *meta, int cap, float scale,
                                                const MergeOut *fin = nullptr) {
    return attend_head<HD, L1PRE>(q, kc, vc, part, n_head, n_head_kv, meta, cap, scale, fin,
                                  blockIdx.x, blockIdx.y, gridDim.y);
}
