// Batched prefill (appended to decode.cu at compile time, after gather.cu, whose embed_elem
// it reuses): a chunk of m prompt tokens through a layer at once. The products are f16 GEMMs
// (cuBLAS, f32 accumulation) over weights dequantized here (dequant_f16[_v]); SwiGLU's output
// (not normalized) goes in scaled by a power of two per row to stay within f16's range, and
// the down projection's result is scaled back in pf_norm. These kernels do the rest, one row (token) per block unless said otherwise, with
// the decode step's operations per element (the same norm, QK-norm / RoPE and gate formulas).
// The chunk's keys and values stay in their own f16 buffers until the chunk has attended
// (pf_attend_g reads the ring's older rows and the chunk's rows up to each token), then
// pf_store writes them into the cache: a chunk no longer than the ring never overwrites a
// row one of its tokens still needs.
// Measured on the H200, 30B synthetic Q4_K_M file (bench/runs/2026-11-30-h200-k): pp512 183.7
// tok/s token by token → 1,309 (r8: one thread per dequantized element, one warp per query
// head) → 4,429 (r9: 32 elements a thread, 1,024-token chunks) → 5,186 (r10: a KV group's
// heads share staged key tiles); pp2048 5,105, pp8192 3,487 (r10).

// Rows of a weight matrix dequantized to f16 (n_rows × n_in, row-major), element by element
// with embed_elem's operations (types 0-6 as embed_gather's); type 7: Q6_K in the split
// layout of q6k_split (common.cuh).
extern "C" __global__ void dequant_f16(const u8 *w, unsigned long long row_bytes, int type,
                                       u16 *out, int n_rows, int n_in) {
    const long long total = (long long)n_rows * n_in;
    const int nb = n_in >> 8;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long r = e / n_in;
        const int i = (int)(e % n_in);
        float v;
        if (type == 7) {
            const int bk = i / 256, s = bk & 7;
            int m;
            const u8 *part = q6s_part(w, nb, (int)r, bk, &m);
            const u16 dh = *(const u16 *)(part + 208 * m + 2 * s);
            const int j = i % 256, half = j / 128, rr = j % 128, quarter = rr / 32, l = rr % 32;
            const signed char *sc = (const signed char *)(part + 192 * m + 16 * s + 8 * half);
            const int lo = part[q6s_ql_at(m, s, 64 * half + l + 32 * (quarter & 1))];
            const int nib = quarter < 2 ? lo & 0xF : lo >> 4;
            const int qhb = part[q6s_qh_at(m, s, 32 * half + l)];
            const int q = (nib | (((qhb >> (2 * quarter)) & 3) << 4)) - 32;
            v = __fmul_rn(__fmul_rn(h2f(dh), (float)sc[l / 16 + 2 * quarter]), (float)q);
        } else {
            v = embed_elem(w + r * row_bytes, type, i);
        }
        out[e] = f2h(v);
    }
}

// dequant_f16 for Q4_K (type 4; 8 and 9: the gate and up halves of the gate/up streams) and
// Q6_K split (type 7) with one thread per 32 consecutive
// elements: 16-byte loads of the quants, 16-byte stores of the halves, the scale (and min)
// once per thread; per element the same operations as dequant_f16 (the same halves).
__device__ __forceinline__ u32 pack2(float a, float b) {
    return (u32)f2h(a) | ((u32)f2h(b) << 16);
}
extern "C" __global__ void dequant_f16_v(const u8 *w, unsigned long long row_bytes, int type,
                                         u16 *out, int n_rows, int n_in) {
    const int nb = n_in >> 8;
    const long long groups = (long long)n_rows * nb * 8;
    for (long long gi = blockIdx.x * (long long)blockDim.x + threadIdx.x; gi < groups;
         gi += (long long)gridDim.x * blockDim.x) {
        const long long r = gi / (nb * 8);
        const int rem = (int)(gi % (nb * 8)), b = rem / 8, j = rem % 8;
        float v[32];
        if (type == 4 || type == 8 || type == 9) {
            // Sub-block j = 2k + hi: low (hi 0) or high nibbles of qs[32k .. 32k + 32); types
            // 8 and 9: the block's header and quarter k's two 16-byte pieces in the gate
            // (8) or up (9) half of the gate/up streams (common.cuh's q4g_part).
            const int k = j / 2, hi = j % 2;
            const u8 *blk, *qp0, *qp1;
            if (type == 4) {
                blk = w + r * row_bytes + (size_t)b * 144;
                qp0 = blk + 16 + 32 * k;
                qp1 = blk + 32 + 32 * k;
            } else {
                int slot;
                const u8 *part = q4g_part(w, nb, type == 9, (int)r, b, &slot);
                blk = part + 16 * slot;
                qp0 = part + 128 + 16 * (4 * slot + k);
                qp1 = part + 640 + 16 * (4 * slot + k);
            }
            int sc, m;
            scale_min_k4(j, blk + 4, &sc, &m);
            const float d = __fmul_rn(h2f(ld_u16(blk)), (float)sc);
            const float mn = __fmul_rn(h2f(ld_u16(blk + 2)), (float)m);
            const uint4 q0 = *(const uint4 *)qp0;
            const uint4 q1 = *(const uint4 *)qp1;
            const u32 qw[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
#pragma unroll
            for (int e = 0; e < 32; e++) {
                const int byte = (qw[e / 4] >> (8 * (e % 4))) & 0xFF;
                const int q = hi ? byte >> 4 : byte & 0xF;
                v[e] = __fsub_rn(__fmul_rn(d, (float)q), mn);
            }
        } else {
            // Group j = 4 half + quarter of 32 elements l = 0 .. 31: ql bytes
            // 64 half + 32 (quarter & 1) .. + 32 and qh bytes 32 half .. + 32, each two
            // 16-byte pieces of the split layout.
            const int s = b & 7, half = j / 4, quarter = j % 4;
            int m;
            const u8 *blk = q6s_part(w, nb, (int)r, b, &m);
            const u16 dh = *(const u16 *)(blk + 208 * m + 2 * s);
            const u8 *qlp = blk + q6s_ql_at(m, s, 64 * half + 32 * (quarter & 1));
            const u8 *qhp = blk + q6s_qh_at(m, s, 32 * half);
            const uint4 l0 = *(const uint4 *)qlp;
            const uint4 l1 = *(const uint4 *)(qlp + 16);
            const uint4 h0 = *(const uint4 *)qhp;
            const uint4 h1 = *(const uint4 *)(qhp + 16);
            const u32 lw[8] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
            const u32 hw[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
            const signed char *sc = (const signed char *)(blk + 192 * m + 16 * s + 8 * half);
            const float d0 = __fmul_rn(h2f(dh), (float)sc[2 * quarter]);
            const float d1 = __fmul_rn(h2f(dh), (float)sc[1 + 2 * quarter]);
#pragma unroll
            for (int l = 0; l < 32; l++) {
                const int lo = (lw[l / 4] >> (8 * (l % 4))) & 0xFF;
                const int hb = (hw[l / 4] >> (8 * (l % 4))) & 0xFF;
                const int nib = quarter < 2 ? lo & 0xF : lo >> 4;
                const int q = (nib | (((hb >> (2 * quarter)) & 3) << 4)) - 32;
                v[l] = __fmul_rn(l < 16 ? d0 : d1, (float)q);
            }
        }
        uint4 *dst = (uint4 *)(out + r * n_in + (long long)b * 256 + 32 * j);
#pragma unroll
        for (int c = 0; c < 4; c++)
            dst[c] = make_uint4(pack2(v[8 * c], v[8 * c + 1]), pack2(v[8 * c + 2], v[8 * c + 3]),
                                pack2(v[8 * c + 4], v[8 * c + 5]), pack2(v[8 * c + 6], v[8 * c + 7]));
    }
}

// The norm between two products for row blockIdx.x of x (n values each), as norm_tail_q8's
// plain loops: mode 1 the weightless entry norm first (x = rmsnorm(x)), mode 2 the post-norm
// tail first (x += rmsnorm(o) · wp, eps_post, o times the row's oscale when given: pf_swiglu's
// power of two); then h = rmsnorm(x) · wn (eps) as f16.
extern "C" __global__ void pf_norm(float *x, const float *o, const float *oscale,
                                   const float *wp, float eps_post, const float *wn, float eps,
                                   u16 *h, int n, int mode) {
    __shared__ float sh[32];
    const int nt = blockDim.x;
    float *xr = x + (size_t)blockIdx.x * n;
    const float *orow = o + (size_t)blockIdx.x * n;
    const float os = oscale ? oscale[blockIdx.x] : 1.0f;
    if (mode == 1) {
        float ss = 0.0f;
        for (int i = threadIdx.x; i < n; i += nt) ss += xr[i] * xr[i];
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
        for (int i = threadIdx.x; i < n; i += nt) xr[i] = xr[i] * scale * 1.0f;
    } else if (mode == 2) {
        float ss = 0.0f;
        for (int i = threadIdx.x; i < n; i += nt) ss += (orow[i] * os) * (orow[i] * os);
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps_post);
        for (int i = threadIdx.x; i < n; i += nt) xr[i] += (orow[i] * os) * scale * wp[i];
    }
    __syncthreads();
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += nt) ss += xr[i] * xr[i];
    const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
    for (int i = threadIdx.x; i < n; i += nt) h[(size_t)blockIdx.x * n + i] = f2h(xr[i] * scale * wn[i]);
}

// QK-norm and RoPE (sliding layers) of token blockIdx.x, as qk_norm_rope_store: block y <
// n_head a query head (q, in place), then the key heads (k, into kc as f16), then the value
// heads (v into vc as f16). cs: the token's (cos, sin) pairs, head_dim values per token.
extern "C" __global__ void pf_qk(float *q, const float *k, const float *v, const float *qw,
                                 const float *kw, int n_head, int n_head_kv, int hd, float eps,
                                 const float *cs, int rope, u16 *kc, u16 *vc) {
    const int t = blockIdx.x, h = blockIdx.y;
    const int kv_dim = n_head_kv * hd;
    const float *cst = cs + (size_t)t * hd;
    if (h >= n_head + n_head_kv) {
        const int kvh = h - n_head - n_head_kv;
        for (int i = threadIdx.x; i < hd; i += blockDim.x)
            vc[(size_t)t * kv_dim + kvh * hd + i] = f2h(v[(size_t)t * kv_dim + kvh * hd + i]);
        return;
    }
    const bool is_q = h < n_head;
    const float *src = is_q ? q + (size_t)t * n_head * hd + h * hd
                            : k + (size_t)t * kv_dim + (h - n_head) * hd;
    const float *w = is_q ? qw : kw;
    const float scale = rsqrtf(head_sumsq(hd, [&](int i) { return src[i]; }) / hd + eps);
    __syncthreads();
    for (int i = threadIdx.x; i < hd / 2; i += blockDim.x) {
        const float2 r = qk_pair(src[2 * i], src[2 * i + 1], scale, w[2 * i], w[2 * i + 1], rope,
                                 cst[2 * i], cst[2 * i + 1]);
        if (is_q) {
            float *dst = q + (size_t)t * n_head * hd + h * hd;
            dst[2 * i] = r.x;
            dst[2 * i + 1] = r.y;
        } else {
            const size_t at = (size_t)t * kv_dim + (h - n_head) * hd + 2 * i;
            kc[at] = f2h(r.x);
            kc[at + 1] = f2h(r.y);
        }
    }
}

// Key j of a chunk token's keys, as the offset of its row (kv_dim halves each) in the cache
// (`*ring`: the cache's row of position lo + j, j < n_ring) or in the chunk's own rows.
__device__ __forceinline__ size_t pf_key_row(int j, int n_ring, int lo, int org_log,
                                             int org_phys, int cap, bool *ring) {
    *ring = j < n_ring;
    return *ring ? (size_t)((org_phys + (lo + j - org_log)) % cap) : (size_t)(j - n_ring);
}

// The attention output of token t, head h: lane's dims acc · inv, times the sigmoid gate, as
// f16 (the decode step's merge formula).
template <int HD>
__device__ __forceinline__ void pf_attend_out(const float *acc, float inv, int t, int h,
                                              int lane, int n_head, const float *gate,
                                              u16 *out) {
    constexpr int D = HD / 32;
#pragma unroll
    for (int e = 0; e < D; e++) {
        const size_t i = (size_t)t * n_head * HD + h * HD + lane * D + e;
        float a = acc[e] * inv;
        a *= 1.0f / (1.0f + expf(-gate[i]));
        out[i] = f2h(a);
    }
}

// Kernel NAME running FN<HD>.
#define PF_ATTEND(NAME, FN, HD)                                                                \
    extern "C" __global__ void NAME(                                                           \
        const float *q, const u16 *kring, const u16 *vring, const u16 *kc, const u16 *vc,      \
        const float *gate, u16 *out, int n_head, int n_head_kv, int p0, int org_log,            \
        int org_phys, int cap, int window, float scale) {                                      \
        FN<HD>(q, kring, vring, kc, vc, gate, out, n_head, n_head_kv, p0, org_log, org_phys,   \
               cap, window, scale);                                                            \
    }

// Causal attention of chunk token t = blockIdx.x (position p0 + t) for the G = n_head /
// n_head_kv query heads of KV group g = blockIdx.y, one warp each (warp w: head g·G + w): the
// cache's rows of positions [lo, p0), lo = max(org_log, p0 + t - window + 1) (pf_key_row),
// then the chunk's rows 0 ..= t (kc, vc), with scale `scale`, an online softmax in f32 and the
// sigmoid gate; the result as f16 into out (row t, head h). The block stages each tile of 32
// keys and values in shared memory once for its G heads; lane j scores key j of the tile (q·k
// over the head dims, q in shared memory), the warp takes the tile's max and sum, then lane l
// accumulates dims l·D .. l·D + D over the tile's 32 values. K rows are padded by 2 halves so
// that lane j's 4-byte reads fall in distinct banks. head_dim 64 or 128, G ≤ 32 (the host
// sends other geometries token by token).
template <int HD>
__device__ __forceinline__ void pf_attend_g_t(const float *q, const u16 *kring, const u16 *vring,
                                              const u16 *kc, const u16 *vc, const float *gate,
                                              u16 *out, int n_head, int n_head_kv, int p0,
                                              int org_log, int org_phys, int cap, int window,
                                              float scale) {
    constexpr int D = HD / 32, KP = HD + 2;
    __shared__ float qs[32][HD];
    __shared__ __align__(16) u16 ks[32][KP];
    __shared__ __align__(16) u16 vs[32][HD];
    const int t = blockIdx.x, g = blockIdx.y, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int G = blockDim.x >> 5, h = g * G + w, kv_dim = n_head_kv * HD;
    for (int d = lane; d < HD; d += 32) qs[w][d] = q[(size_t)t * n_head * HD + h * HD + d];
    const int pos = p0 + t;
    const int lo = max(org_log, pos - window + 1);
    const int n_ring = max(p0 - lo, 0);
    const int n_keys = n_ring + t + 1;
    float m = -3.0e38f, l = 0.0f, acc[D];
#pragma unroll
    for (int e = 0; e < D; e++) acc[e] = 0.0f;
    for (int j0 = 0; j0 < n_keys; j0 += 32) {
        __syncthreads();
        // Stage keys j0 .. j0 + 31 (4-byte pieces; rows past the end are zeros).
        for (int i = threadIdx.x; i < 32 * (HD / 2); i += blockDim.x) {
            const int r = i / (HD / 2), c = i % (HD / 2), j = j0 + r;
            u32 kw = 0, vw = 0;
            if (j < n_keys) {
                bool ring;
                const size_t row = pf_key_row(j, n_ring, lo, org_log, org_phys, cap, &ring) * kv_dim;
                const u16 *kr = (ring ? kring : kc) + row + g * HD;
                const u16 *vr = (ring ? vring : vc) + row + g * HD;
                kw = *(const u32 *)(kr + 2 * c);
                vw = *(const u32 *)(vr + 2 * c);
            }
            *(u32 *)&ks[r][2 * c] = kw;
            *(u32 *)&vs[r][2 * c] = vw;
        }
        __syncthreads();
        // Lane j: the score of key j0 + j.
        float sc = 0.0f;
#pragma unroll 8
        for (int c = 0; c < HD / 2; c++) {
            const u32 kw = *(const u32 *)&ks[lane][2 * c];
            sc += qs[w][2 * c] * h2f((u16)(kw & 0xFFFF)) + qs[w][2 * c + 1] * h2f((u16)(kw >> 16));
        }
        sc = j0 + lane < n_keys ? sc * scale : -3.0e38f;
        float tmax = sc;
        for (int o = 16; o > 0; o >>= 1) tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, o));
        const float nm = fmaxf(m, tmax);
        const float corr = expf(m - nm);
        const float p = j0 + lane < n_keys ? expf(sc - nm) : 0.0f;
        l = l * corr + warp_sum(p);
#pragma unroll
        for (int e = 0; e < D; e++) acc[e] *= corr;
        for (int j = 0; j < 32; j++) {
            const float pj = __shfl_sync(0xffffffffu, p, j);
#pragma unroll
            for (int e = 0; e < D; e++) acc[e] += pj * h2f(vs[j][lane * D + e]);
        }
        m = nm;
    }
    pf_attend_out<HD>(acc, 1.0f / l, t, h, lane, n_head, gate, out);
}

PF_ATTEND(pf_attend_g_64, pf_attend_g_t, 64)
PF_ATTEND(pf_attend_g_128, pf_attend_g_t, 128)

// The chunk's keys and values (m rows of kv_dim f16) into cache rows slots[t].
extern "C" __global__ void pf_store(const u16 *kc, const u16 *vc, u16 *kring, u16 *vring,
                                    const int *slots, int kv_dim) {
    const int t = blockIdx.x;
    const size_t dst = (size_t)slots[t] * kv_dim, src = (size_t)t * kv_dim;
    for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
        kring[dst + i] = kc[src + i];
        vring[dst + i] = vc[src + i];
    }
}

// SwiGLU of row blockIdx.x (n_ff values): out = f16(silu(g) · u / s), silu_mul as the decode
// step, s the smallest power of two (≥ 1) that brings the row's largest magnitude within
// 32,768 (the values are not normalized and may pass f16's 65,504; a power of two changes no
// significant bit), written to scale[row] for pf_norm to undo after the down projection.
extern "C" __global__ void pf_swiglu(const float *g, const float *u, u16 *out, float *scale,
                                     int n_ff) {
    __shared__ float sh[32];
    const size_t r0 = (size_t)blockIdx.x * n_ff;
    float amax = 0.0f;
    for (int i = threadIdx.x; i < n_ff; i += blockDim.x)
        amax = fmaxf(amax, fabsf(silu_mul(g[r0 + i], u[r0 + i])));
    amax = block_max(amax, sh);
    float s = 1.0f;
    // Finite only (a NaN or Inf row passes through unscaled, as NaN / Inf).
    if (amax < 3.0e38f)
        while (amax / s > 32768.0f) s *= 2.0f;
    const float inv = 1.0f / s;
    for (int i = threadIdx.x; i < n_ff; i += blockDim.x)
        out[r0 + i] = f2h(silu_mul(g[r0 + i], u[r0 + i]) * inv);
    if (threadIdx.x == 0) scale[blockIdx.x] = s;
}
