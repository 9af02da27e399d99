// Element-wise, normalisation and attention kernels of one decode step (f32 throughout,
// single sequence), so that a whole token runs on the GPU between one upload of the embedding
// row and one download of the logits.
//
// Sizes are small (one row of 6656, 32 heads), so each kernel is one or a few thread blocks;
// launch overhead, not bandwidth, is what these cost, which is why the step is captured as a
// CUDA graph: everything that changes from step to step (position, ring slots, window) is
// read from device memory.

// `common.cuh` (types, h2f, warp_sum) is prepended at compile time.

__device__ __forceinline__ u16 f2h(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ float block_sum(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    const int n_warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < n_warps ? shared[threadIdx.x] : 0.0f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    return shared[0];
}

__device__ __forceinline__ float block_max(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    const int n_warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < n_warps ? shared[threadIdx.x] : -3.0e38f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    return shared[0];
}







// l = cap * tanh(l * scale / cap) (cap 0: l * scale), element-wise.
extern "C" __global__ void scale_softcap(float *l, int n, float scale, float cap) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = l[i] * scale;
        l[i] = cap != 0.0f ? cap * tanhf(v / cap) : v;
    }
}

// Deterministic pseudo-random f16 values in [-1, 1) (index hash): fills a KV cache for
// long-context benchmarks without running the prefill.
extern "C" __global__ void fill_random_f16(u16 *dst, unsigned long long n, unsigned int seed) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        u32 h = (u32)i * 2654435761u ^ seed;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        const float f = (float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f;
        dst[i] = f2h(f);
    }
}

// Split-K flash-decode attention, first pass: block (h, s) runs an online softmax over its
// share of the window's rows (oldest first: row j of the window is slot (first + j) % cap) and
// writes (max, sum, unnormalised output[hd]) to `part[(h * n_split + s) * (hd + 2)]`. One warp
// per row at a time: lane d holds dimensions d, d + 32, ...; the four warps' partials are
// merged through shared memory. Empty shares write max = -inf, sum = 0.
#define MAX_HD 256
extern "C" __global__ void attend_split(const float *q, const u16 *kc, const u16 *vc,
                                        float *part, int n_head, int n_head_kv, int hd,
                                        const int *meta, int cap, float scale) {
    __shared__ float qs[MAX_HD];
    __shared__ float wm[4], wsum[4];
    __shared__ float wo[4][MAX_HD];
    const int h = blockIdx.x, s = blockIdx.y, n_split = gridDim.y;
    const int first = meta[0], n = meta[1];
    const int kvh = h / (n_head / n_head_kv);
    const int kv_dim = n_head_kv * hd;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int i = threadIdx.x; i < hd; i += blockDim.x) qs[i] = q[h * hd + i];
    __syncthreads();
    const int per = (n + n_split - 1) / n_split;
    const int j0 = s * per, j1 = min(n, j0 + per);
    float m = -3.0e38f, sum = 0.0f;
    float o[MAX_HD / 32];
#pragma unroll
    for (int k = 0; k < MAX_HD / 32; k++) o[k] = 0.0f;
    for (int j = j0 + warp; j < j1; j += 4) {
        const size_t row = (size_t)((first + j) % cap) * kv_dim + kvh * hd;
        float d = 0.0f;
        for (int i = lane; i < hd; i += 32) d += qs[i] * h2f(kc[row + i]);
        d = warp_sum(d) * scale;
        const float nm = fmaxf(m, d);
        const float corr = expf(m - nm), p = expf(d - nm);
        sum = sum * corr + p;
#pragma unroll
        for (int k = 0; k < MAX_HD / 32; k++) {
            const int i = lane + 32 * k;
            if (i < hd) o[k] = o[k] * corr + p * h2f(vc[row + i]);
        }
        m = nm;
    }
    if (lane == 0) {
        wm[warp] = m;
        wsum[warp] = sum;
    }
#pragma unroll
    for (int k = 0; k < MAX_HD / 32; k++) {
        const int i = lane + 32 * k;
        if (i < hd) wo[warp][i] = o[k];
    }
    __syncthreads();
    float *out = part + ((size_t)h * n_split + s) * (hd + 2);
    float bm = fmaxf(fmaxf(wm[0], wm[1]), fmaxf(wm[2], wm[3]));
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
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
}


// Keeps the GPU busy for `ns` nanoseconds (globaltimer): the profiling pass queues a step's
// kernels and events behind it, so host launch gaps do not show up as kernel time.
extern "C" __global__ void spin_ns(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

// ---- Fused producers: each writes its f32 result and, when `qa` is set, the same values
// quantized to int8 blocks of 32 for the next matvec (quant_block32, bit-identical to the
// separate quantize_q8_32 pass). Warps walk whole 32-element chunks, so n % 32 == 0 there.

// The norm between two matvecs, one block (1024 threads):
//   mode 0: h = rms_norm(x) * wn
//   mode 1: x = rms_norm(x) (the weightless entry norm), then as mode 0
//   mode 2: x += rms_norm(o, eps_post) * wp (a post-norm tail), then as mode 0
// Same expressions and reduction order as rms_norm / add_rms_norm, so the same bits.
extern "C" __global__ void norm_tail_q8(float *x, const float *o, const float *wp, float eps_post,
                                        const float *wn, float eps, float *h, signed char *qa,
                                        float *da, float *sa, int n, int mode) {
    __shared__ float sh[32];
    if (mode == 1) {
        float ss = 0.0f;
        for (int i = threadIdx.x; i < n; i += blockDim.x) ss += x[i] * x[i];
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
        for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = x[i] * scale * 1.0f;
    } else if (mode == 2) {
        float ss = 0.0f;
        for (int i = threadIdx.x; i < n; i += blockDim.x) ss += o[i] * o[i];
        const float scale = rsqrtf(block_sum(ss, sh) / n + eps_post);
        for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] += o[i] * scale * wp[i];
    }
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += x[i] * x[i];
    const float scale = rsqrtf(block_sum(ss, sh) / n + eps);
    if (qa) {
        const int lane = threadIdx.x & 31;
        for (int base = threadIdx.x & ~31; base < n; base += blockDim.x) {
            const float v = x[base + lane] * scale * wn[base + lane];
            h[base + lane] = v;
            quant_block32(v, base >> 5, qa, da, sa);
        }
    } else {
        for (int i = threadIdx.x; i < n; i += blockDim.x) h[i] = x[i] * scale * wn[i];
    }
}

// qk_norm_rope, plus the KV store: blocks n_head .. n_head + n_head_kv also write their
// normed, rotated K head into cache slot *slot_p (f16), and the next n_head_kv blocks copy
// the V heads there.
extern "C" __global__ void qk_norm_rope_store(float *q, float *k, const float *v,
                                              const float *qw, const float *kw, int n_head,
                                              int n_head_kv, int hd, float eps, const int *pos_p,
                                              float base, int rope, u16 *kc, u16 *vc,
                                              const int *slot_p) {
    const int h = blockIdx.x;
    const size_t row = (size_t)(*slot_p) * n_head_kv * hd;
    if (h >= n_head + n_head_kv) {
        const int kvh = h - n_head - n_head_kv;
        for (int i = threadIdx.x; i < hd; i += blockDim.x)
            vc[row + kvh * hd + i] = f2h(v[kvh * hd + i]);
        return;
    }
    const int pos = *pos_p;
    __shared__ float sh[32];
    float *vv = h < n_head ? q + h * hd : k + (h - n_head) * hd;
    const float *w = h < n_head ? qw : kw;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < hd; i += blockDim.x) ss += vv[i] * vv[i];
    const float scale = rsqrtf(block_sum(ss, sh) / hd + eps);
    __syncthreads();
    for (int i = threadIdx.x; i < hd / 2; i += blockDim.x) {
        float a = vv[2 * i] * scale * w[2 * i];
        float b = vv[2 * i + 1] * scale * w[2 * i + 1];
        if (rope) {
            const double theta = (double)pos * pow((double)base, -2.0 * i / hd);
            const float c = (float)cos(theta), s = (float)sin(theta);
            const float ra = a * c - b * s, rb = a * s + b * c;
            a = ra;
            b = rb;
        }
        vv[2 * i] = a;
        vv[2 * i + 1] = b;
        if (h >= n_head) {
            const size_t at = row + (size_t)(h - n_head) * hd + 2 * i;
            kc[at] = f2h(a);
            kc[at + 1] = f2h(b);
        }
    }
}

// attend_merge, then the sigmoid gate (a *= sigmoid(g), as sigmoid_gate), then the int8
// quantization for the output projection (hd % 32 == 0 when qa is set).
extern "C" __global__ void attend_merge_gate_q8(const float *part, float *out, const float *g,
                                                signed char *qa, float *da, float *sa, int hd,
                                                int n_split) {
    const int h = blockIdx.x;
    const float *p = part + (size_t)h * n_split * (hd + 2);
    float gm = -3.0e38f;
    for (int s = 0; s < n_split; s++) gm = fmaxf(gm, p[s * (hd + 2)]);
    float total = 0.0f;
    for (int s = 0; s < n_split; s++) total += p[s * (hd + 2) + 1] * expf(p[s * (hd + 2)] - gm);
    const float inv = 1.0f / total;
    const int lane = threadIdx.x & 31;
    for (int base = threadIdx.x & ~31; base < hd; base += blockDim.x) {
        const int i = base + lane;
        float a = 0.0f;
        if (i < hd) {
            float acc = 0.0f;
            for (int s = 0; s < n_split; s++)
                acc += p[s * (hd + 2) + 2 + i] * expf(p[s * (hd + 2)] - gm);
            a = acc * inv;
            a *= 1.0f / (1.0f + expf(-g[h * hd + i]));
            out[h * hd + i] = a;
        }
        if (qa) quant_block32(a, (h * hd + base) >> 5, qa, da, sa);
    }
}

// g = silu(g) * u (as swiglu), then the int8 quantization for the down projection
// (n % 32 == 0 when qa is set).
extern "C" __global__ void swiglu_q8(float *g, const float *u, signed char *qa, float *da,
                                     float *sa, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if ((i & ~31) >= n) return;
    float r = 0.0f;
    if (i < n) {
        const float v = g[i];
        r = v / (1.0f + expf(-v)) * u[i];
        g[i] = r;
    }
    if (qa) quant_block32(r, i >> 5, qa, da, sa);
}
