// norm_tail_q8 (the norm between two matvecs: post-norm residual, next norm, int8 row) spread
// over a thread-block cluster of NC_BLOCKS blocks (sm_90, appended to decode.cu at compile
// time): block b takes elements [b n / NC_BLOCKS, (b + 1) n / NC_BLOCKS), 8 consecutive values
// per thread as norm_tail_vec8, and the two row sums go through distributed shared memory
// (each block's sum in its own shared slot, read by every block in rank order, so all blocks
// get the same bits). One block of 1,024 threads moves the whole row (4 × 26 KB in, 2 × 26 KB
// out for n = 6656) through one SM; here each SM moves an eighth. Same operations per element
// as norm_tail_vec8; only the order of the row sums differs.
#define NC_BLOCKS 8

// The cluster-wide sum of v (every thread of every block gets it); slot k of `slots` must
// not have been used before in this launch.
__device__ __forceinline__ float cluster_sum(float v, float *sh, float *slots, int k) {
    const float b = block_sum(v, sh);
    if (threadIdx.x == 0) slots[k] = b;
    cluster_sync_all();
    float t = 0.0f;
#pragma unroll
    for (u32 r = 0; r < NC_BLOCKS; r++) t += dsmem_ld(&slots[k], r);
    return t;
}

extern "C" __global__ void __launch_bounds__(1024) norm_tail_q8_cl(
    float *x, const float *o, const float *wp, float eps_post, const float *wn, float eps,
    float *h, signed char *qa, float *da, float *sa, int n, int mode) {
    __shared__ float sh[32];
    __shared__ float slots[2];
    const int per = n / NC_BLOCKS;
    const int t = threadIdx.x, i0 = blockIdx.x * per + 8 * t;
    const bool on = 8 * t < per;
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 c = on ? *(const float4 *)(wn + i0) : z, d = on ? *(const float4 *)(wn + i0 + 4) : z;
    float4 pc = z, pd = z;
    if (mode == 2 && on) {
        pc = *(const float4 *)(wp + i0);
        pd = *(const float4 *)(wp + i0 + 4);
    }
    float xv[8];
    {
        const float4 a = on ? *(const float4 *)(x + i0) : z, b = on ? *(const float4 *)(x + i0 + 4) : z;
        xv[0] = a.x; xv[1] = a.y; xv[2] = a.z; xv[3] = a.w; xv[4] = b.x; xv[5] = b.y; xv[6] = b.z; xv[7] = b.w;
    }
    const float wv[8] = {c.x, c.y, c.z, c.w, d.x, d.y, d.z, d.w};
    if (mode == 1) {
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) ss += xv[k] * xv[k];
        const float scale = rsqrtf(cluster_sum(ss, sh, slots, 0) / n + eps);
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] = xv[k] * scale * 1.0f;
    } else if (mode == 2) {
        const float4 a = on ? *(const float4 *)(o + i0) : z, b = on ? *(const float4 *)(o + i0 + 4) : z;
        const float ov[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        const float pv[8] = {pc.x, pc.y, pc.z, pc.w, pd.x, pd.y, pd.z, pd.w};
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) ss += ov[k] * ov[k];
        const float scale = rsqrtf(cluster_sum(ss, sh, slots, 0) / n + eps_post);
#pragma unroll
        for (int k = 0; k < 8; k++) xv[k] += ov[k] * scale * pv[k];
    }
    if (mode != 0 && on) {
        *(float4 *)(x + i0) = make_float4(xv[0], xv[1], xv[2], xv[3]);
        *(float4 *)(x + i0 + 4) = make_float4(xv[4], xv[5], xv[6], xv[7]);
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) ss += xv[k] * xv[k];
    const float scale = rsqrtf(cluster_sum(ss, sh, slots, 1) / n + eps);
    float hv[8];
#pragma unroll
    for (int k = 0; k < 8; k++) hv[k] = xv[k] * scale * wv[k];
    if (on) {
        *(float4 *)(h + i0) = make_float4(hv[0], hv[1], hv[2], hv[3]);
        *(float4 *)(h + i0 + 4) = make_float4(hv[4], hv[5], hv[6], hv[7]);
    }
    if (qa) {
        // As norm_tail_vec8: a 32-value block over 4 threads (per % 32 == 0: aligned).
        float amax = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) amax = fmaxf(amax, fabsf(hv[k]));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
        const float dd = amax / 127.0f;
        const float id = dd > 0.0f ? 1.0f / dd : 0.0f;
        u32 packed[2] = {0u, 0u};
        float qs = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const int q = __float2int_rn(hv[k] * id);
            qs += (float)q;
            packed[k / 4] |= ((u32)(q & 0xFF)) << (8 * (k % 4));
        }
        qs += __shfl_xor_sync(0xffffffffu, qs, 1);
        qs += __shfl_xor_sync(0xffffffffu, qs, 2);
        if (on) {
            *(uint2 *)(qa + i0) = make_uint2(packed[0], packed[1]);
            if ((t & 3) == 0) {
                da[i0 >> 5] = dd;
                sa[i0 >> 5] = dd * qs;
            }
        }
    }
    // No block leaves while another may still read its slots.
    cluster_sync_all();
}
