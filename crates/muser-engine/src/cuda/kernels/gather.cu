// Embedding gather and greedy argmax (appended to decode.cu at compile time).
//
// embed_gather: dequantizes row `*tok` of a quantized table straight into the step's input,
// one thread per element, with the operations of the `_ref` dequantizers in the same order
// and no contraction (__fmul_rn / __fsub_rn), so that the row is bit-identical to the host's.
// The token id is read from device memory, so a captured graph replays with the next token.
// Types (the host's `embed_type_code`): 0 F32, 1 F16, 2 BF16, 3 Q8_0, 4 Q4_K, 5 Q5_K, 6 Q6_K.

__device__ __forceinline__ u16 ld_u16(const u8 *p) { return (u16)p[0] | ((u16)p[1] << 8); }

__device__ __forceinline__ float embed_elem(const u8 *row, int type, int i) {
    switch (type) {
    case 0: {
        const u32 b = (u32)row[4 * i] | ((u32)row[4 * i + 1] << 8) | ((u32)row[4 * i + 2] << 16) |
                      ((u32)row[4 * i + 3] << 24);
        return __uint_as_float(b);
    }
    case 1: return h2f(ld_u16(row + 2 * i));
    case 2: return __uint_as_float((u32)ld_u16(row + 2 * i) << 16);
    case 3: {
        const u8 *b = row + (i / 32) * 34;
        return __fmul_rn((float)(signed char)b[2 + i % 32], h2f(ld_u16(b)));
    }
    case 4:
    case 5: {
        // Q4_K (144-byte blocks) and Q5_K (176, with the fifth bits in qh): d*sc*q - dmin*m.
        const int bs = type == 4 ? 144 : 176;
        const u8 *b = row + (i / 256) * bs;
        const int j = i % 256, k = j / 64, l = j % 64, hi = l >= 32, li = l % 32;
        const u8 *qs = b + (type == 4 ? 16 : 48);
        int sc, m;
        scale_min_k4(2 * k + hi, b + 4, &sc, &m);
        const float d = __fmul_rn(h2f(ld_u16(b)), (float)sc);
        const float mn = __fmul_rn(h2f(ld_u16(b + 2)), (float)m);
        int q = hi ? qs[32 * k + li] >> 4 : qs[32 * k + li] & 0xF;
        if (type == 5 && (b[16 + li] & (1u << (2 * k + hi)))) q += 16;
        return __fsub_rn(__fmul_rn(d, (float)q), mn);
    }
    default: {
        // Q6_K (210-byte blocks: ql[128], qh[64], scales[16], d): (d*sc) * (q - 32).
        const u8 *b = row + (i / 256) * 210;
        const int j = i % 256, half = j / 128, r = j % 128, quarter = r / 32, l = r % 32;
        const u8 *ql = b + 64 * half, *qh = b + 128 + 32 * half;
        const signed char *sc = (const signed char *)(b + 192 + 8 * half);
        const int lo = ql[l + 32 * (quarter & 1)];
        const int nib = quarter < 2 ? lo & 0xF : lo >> 4;
        const int q = (nib | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
        const float d = __fmul_rn(h2f(ld_u16(b + 208)), (float)sc[l / 16 + 2 * quarter]);
        return __fmul_rn(d, (float)q);
    }
    }
}

// The step's token: *tok, or where that is negative (CudaSession::greedy_fed) the argmax
// that the previous step's LM head folded into the 64-bit key whose address kin holds (low
// and high halves; argmax_key's encoding, 0: index 0).
__device__ __forceinline__ int fed_token(const int *tok, const u32 *kin) {
    int t = *tok;
    if (t < 0) {
        const unsigned long long *k =
            (const unsigned long long *)((unsigned long long)kin[0] |
                                         ((unsigned long long)kin[1] << 32));
        const unsigned long long key = k ? __ldcg(k) : 0ull;
        t = key ? (int)(0xffffffffu - (u32)key) : 0;
    }
    return t;
}

extern "C" __global__ void embed_gather(const u8 *table, unsigned long long row_bytes, int type,
                                        const int *tok, const u32 *kin, float *x, int n) {
    const u8 *row = table + (unsigned long long)fed_token(tok, kin) * row_bytes;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] = embed_elem(row, type, i);
}

// (value, index) pairs in argmax order: the larger value, the lower index on equal values
// (an index of 0x7fffffff, a thread that saw only NaN, loses to any other).
__device__ __forceinline__ void argmax_take(float &best, int &bi, float ob, int oi) {
    if (ob > best || (ob == best && oi < bi)) {
        best = ob;
        bi = oi;
    }
}

// The block's best pair, in thread 0 (blockDim.x a multiple of 32, at most 1,024).
__device__ __forceinline__ void argmax_block(float &best, int &bi) {
    __shared__ float sv[32];
    __shared__ int si[32];
    for (int o = 16; o > 0; o >>= 1)
        argmax_take(best, bi, __shfl_xor_sync(0xffffffffu, best, o),
                    __shfl_xor_sync(0xffffffffu, bi, o));
    const int w = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (lane == 0) {
        sv[w] = best;
        si[w] = bi;
    }
    __syncthreads();
    if (w == 0) {
        const int nw = blockDim.x / 32;
        best = lane < nw ? sv[lane] : __int_as_float(0xff800000);
        bi = lane < nw ? si[lane] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1)
            argmax_take(best, bi, __shfl_xor_sync(0xffffffffu, best, o),
                        __shfl_xor_sync(0xffffffffu, bi, o));
    }
}

// Greedy argmax over `n` logits: the largest value, the lowest index on ties (as the host's
// `sampling::argmax`); NaN is never chosen over a number. Spread over the grid (one block of
// 1,024 threads took ~40 µs for the 202,048 logits, 0.8 % of a token: bench/runs/
// 2026-12-01-h200-s s6): each thread walks its elements in increasing order, each block
// writes its best pair to the scratch (ws[2 + b]: value bits, ws[2 + G + b]: index), and the
// last block to arrive (counter ws[1], set back to 0 by it) reduces the G pairs into ws[0].
// The pairs are totally ordered, so the grouping does not change the result. The result also
// goes to o1 and o2 where they are not null (CudaSession::greedy_fed: the next step's token in
// its parameters, and the run's token list).
extern "C" __global__ void __launch_bounds__(256) argmax_f32_grid(const float *v, int n, u32 *ws,
                                                                 u32 *o1, u32 *o2) {
    __shared__ int last;
    float best = __int_as_float(0xff800000);
    int bi = 0x7fffffff;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float x = v[i];
        if (x > best || (bi == 0x7fffffff && x == x)) {
            best = x;
            bi = i;
        }
    }
    argmax_block(best, bi);
    const int g = gridDim.x;
    if (threadIdx.x == 0) {
        ws[2 + blockIdx.x] = __float_as_uint(best);
        ws[2 + g + blockIdx.x] = (u32)bi;
        __threadfence();
        const unsigned prev = atomicAdd(&ws[1], 1u);
        last = prev == (unsigned)g - 1;
        if (last) ws[1] = 0u;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    best = __int_as_float(0xff800000);
    bi = 0x7fffffff;
    for (int b = threadIdx.x; b < g; b += blockDim.x)
        argmax_take(best, bi, __uint_as_float(__ldcg(&ws[2 + b])), (int)__ldcg(&ws[2 + g + b]));
    argmax_block(best, bi);
    if (threadIdx.x == 0) {
        const u32 r = bi == 0x7fffffff ? 0u : (u32)bi;
        ws[0] = r;
        if (o1) *o1 = r;
        if (o2) *o2 = r;
    }
}
