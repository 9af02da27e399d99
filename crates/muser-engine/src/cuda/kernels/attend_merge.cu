// Wide split-K merge (appended to decode.cu at compile time; DecodeTuning::wide_merge): the
// same result as attend_merge_gate_q8 (merge of the split partials, sigmoid gate, int8 blocks
// of 32 for the output projection) with the splits spread over the threads of more blocks.
//
// Grid (n_head, hd / 32): block (h, b) owns dims 32 b .. 32 b + 32 of head h, i.e. exactly one
// int8 block of the quantized row. Its T threads (a power of two, at least 32):
//   1. the split weights exp(m_s - max) into shared memory and their total (every block of a
//      head recomputes these from the n_split (max, sum) pairs: 2 floats per split);
//   2. thread (grp, c) of T / 16 groups × 16 columns sums float2 column c of the splits
//      s = grp, grp + T / 16, ... (one 128-byte row piece per split and 16 threads);
//   3. a tree over the groups in shared memory, then warp 0 applies 1 / total, the gate, and
//      quantizes.
// attend_merge_gate_q8 (one block of 128 threads per head, each thread walking every split
// of one dim) read the partials of a full layer through 32 SMs with ≤ 8 loads in flight per
// thread: 13.5 µs per full layer at depth 32768 (65 splits) and ~34 µs at 131072 (257),
// event-timed (bench/runs/2026-11-30-h200-i). The summation order differs from that kernel's,
// so this one is held to the oracle's bar (NMSE against the f64 reference, the session's KL).
//
// Measured on the H200 (bench/runs/2026-11-30-h200-j r1, 256 threads, every layer): merge
// 12.6 → 7.9 µs per layer at depth 131072 (52-layer mean, event-timed), decode 155.2 → 160.7
// tok/s there, 172.2-172.3 → 173.5-174.1 at 32768; 256 and 512 threads alike. With 1-2 splits
// (depth 0) there is nothing to spread: the session keeps attend_merge_gate_q8 below
// WideMerge::min_splits.
// Round r (bench/runs/2026-12-01-h200-r r6): the column pieces, the first split's max and sum
// and the gate loaded before the reductions: the same bits (logits digests), 6.2 → 5.8 µs per
// call event-timed at depth 32768, decode +0.3-0.4 % at depths 4096 and 32768. Two variants
// were measured slower and removed: extra block columns prefetching the output projection
// into L2 (r4: −1.7 % at depth; branch cuda-merge-prefetch), and the merge folded into the
// tensor-core attention through thread-block clusters (r1-r3: 1-3 % slower even with one
// cluster per column; branch cuda-cluster-merge).

extern "C" __global__ void attend_merge_gate_q8_w(const float *part, float *out, const float *g,
                                                  signed char *qa, float *da, float *sa, int hd,
                                                  int n_split) {
    __shared__ float wgt[MAX_SPLITS];
    __shared__ float sh[32];
    __shared__ float red[1024 / 16][32];
    const int h = blockIdx.x, d0 = 32 * blockIdx.y;
    const int row = hd + 2;
    const float *p = part + (size_t)h * n_split * row;
    const int ng = blockDim.x >> 4, grp = threadIdx.x >> 4, c = threadIdx.x & 15;
    // (hd + 2) and the column offset are even: float2 loads are 8-byte aligned.
    const float *pc = p + 2 + d0 + 2 * c;
    // Issued first, so that their latencies overlap instead of following the reductions
    // (round r: the same bits): the thread's first 8 column pieces (splits grp, grp + ng, ...),
    // its first split's max and sum, the gate values.
    float2 xs[8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int s = grp + j * ng;
        xs[j] = s < n_split ? *(const float2 *)(pc + (size_t)s * row) : make_float2(0.0f, 0.0f);
    }
    const float gv = threadIdx.x < 32 ? g[h * hd + d0 + threadIdx.x] : 0.0f;
    const bool own = (int)threadIdx.x < n_split;
    const float m_own = own ? p[(size_t)threadIdx.x * row] : -3.0e38f;
    const float l_own = own ? p[(size_t)threadIdx.x * row + 1] : 0.0f;
    float lm = m_own;
    for (int s = threadIdx.x + blockDim.x; s < n_split; s += blockDim.x)
        lm = fmaxf(lm, p[(size_t)s * row]);
    const float gm = block_max(lm, sh);
    float lt = 0.0f;
    if (own) {
        const float w = expf(m_own - gm);
        wgt[threadIdx.x] = w;
        lt += l_own * w;
    }
    for (int s = threadIdx.x + blockDim.x; s < n_split; s += blockDim.x) {
        const float w = expf(p[(size_t)s * row] - gm);
        wgt[s] = w;
        lt += p[(size_t)s * row + 1] * w;
    }
    // block_sum ends with a barrier: wgt is complete after it.
    const float total = block_sum(lt, sh);
    float ax = 0.0f, ay = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int s = grp + j * ng;
        if (s < n_split) {
            const float w = wgt[s];
            ax += xs[j].x * w;
            ay += xs[j].y * w;
        }
    }
#pragma unroll 8
    for (int s = grp + 8 * ng; s < n_split; s += ng) {
        const float2 x = *(const float2 *)(pc + (size_t)s * row);
        const float w = wgt[s];
        ax += x.x * w;
        ay += x.y * w;
    }
    red[grp][2 * c] = ax;
    red[grp][2 * c + 1] = ay;
    __syncthreads();
    for (int st = ng >> 1; st > 0; st >>= 1) {
        if (grp < st) {
            red[grp][2 * c] += red[grp + st][2 * c];
            red[grp][2 * c + 1] += red[grp + st][2 * c + 1];
        }
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        const int i = d0 + threadIdx.x;
        float a = red[0][threadIdx.x] / total;
        a *= 1.0f / (1.0f + expf(-gv));
        out[h * hd + i] = a;
        if (qa) quant_block32(a, (h * hd + d0) >> 5, qa, da, sa);
    }
}

// The wide merge with the splits across the lanes of each warp (WideMerge::warp_columns): block
// (h, b) of 8 warps owns dims 32 b .. 32 b + 32 of head h, warp w its columns 4 w .. 4 w + 3;
// lane i takes splits i, i + 32, ... Every warp finds the splits' max and the softmax total
// itself (warp shuffles), so the only barrier is the one before warp 0 quantizes the block's
// 32 values, where attend_merge_gate_q8_w has ~8 (block max, block sum, a tree over 16
// groups). The loads of a lane's first 4 splits (columns, max, sum) and the gate are issued
// before any arithmetic (the gate as float4: g must be 16-byte aligned, as the session's and
// attend_op's gate buffers are). Another summation order (held to the oracle's bar).
#define MW_SPLITS 4  // splits per lane loaded up front
extern "C" __global__ void __launch_bounds__(256)
    attend_merge_gate_q8_wv(const float *part, float *out, const float *g, signed char *qa,
                            float *da, float *sa, int hd, int n_split) {
    __shared__ float vals[32];
    const int h = blockIdx.x, d0 = 32 * blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int row = hd + 2;
    const float *p = part + (size_t)h * n_split * row;
    // Column offset 2 + d0 + 4 warp and row (hd + 2) are even: 8-byte aligned float2 loads.
    const int col = 2 + d0 + 4 * warp;
    float2 xa[MW_SPLITS], xb[MW_SPLITS];
    float mv[MW_SPLITS], lv[MW_SPLITS];
#pragma unroll
    for (int j = 0; j < MW_SPLITS; j++) {
        const int s = lane + 32 * j;
        const bool on = s < n_split;
        const float *ps = p + (size_t)s * row;
        xa[j] = on ? *(const float2 *)(ps + col) : make_float2(0.0f, 0.0f);
        xb[j] = on ? *(const float2 *)(ps + col + 2) : make_float2(0.0f, 0.0f);
        mv[j] = on ? ps[0] : -3.0e38f;
        lv[j] = on ? ps[1] : 0.0f;
    }
    const float4 gv = lane == 0 ? *(const float4 *)(g + h * hd + d0 + 4 * warp)
                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float m = mv[0];
#pragma unroll
    for (int j = 1; j < MW_SPLITS; j++) m = fmaxf(m, mv[j]);
    for (int s = lane + 32 * MW_SPLITS; s < n_split; s += 32) m = fmaxf(m, p[(size_t)s * row]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float tot = 0.0f;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int j = 0; j < MW_SPLITS; j++) {
        if (lane + 32 * j < n_split) {
            const float w = expf(mv[j] - m);
            tot += lv[j] * w;
            a.x += xa[j].x * w;
            a.y += xa[j].y * w;
            a.z += xb[j].x * w;
            a.w += xb[j].y * w;
        }
    }
    for (int s = lane + 32 * MW_SPLITS; s < n_split; s += 32) {
        const float *ps = p + (size_t)s * row;
        const float w = expf(ps[0] - m);
        const float2 x0 = *(const float2 *)(ps + col), x1 = *(const float2 *)(ps + col + 2);
        tot += ps[1] * w;
        a.x += x0.x * w;
        a.y += x0.y * w;
        a.z += x1.x * w;
        a.w += x1.y * w;
    }
    tot = warp_sum(tot);
    a.x = warp_sum(a.x);
    a.y = warp_sum(a.y);
    a.z = warp_sum(a.z);
    a.w = warp_sum(a.w);
    if (lane == 0) {
        vals[4 * warp] = a.x / tot * (1.0f / (1.0f + expf(-gv.x)));
        vals[4 * warp + 1] = a.y / tot * (1.0f / (1.0f + expf(-gv.y)));
        vals[4 * warp + 2] = a.z / tot * (1.0f / (1.0f + expf(-gv.z)));
        vals[4 * warp + 3] = a.w / tot * (1.0f / (1.0f + expf(-gv.w)));
    }
    __syncthreads();
    if (warp == 0) {
        const float v = vals[lane];
        out[h * hd + d0 + lane] = v;
        if (qa) quant_block32(v, (h * hd + d0) >> 5, qa, da, sa);
    }
}
