// Shared by the matvec kernels (prepended to matvec.cu and q8act.cu at compile time):
// integer types, f16 conversion without toolkit headers, warp reductions, the k-quant 6-bit
// scale unpacking and the multi-row output step.

#define WARPS 4
#define R 4
#define MAX_TOK 8

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// ggml's get_scale_min_k4: 6-bit scale and min of sub-block j (0..8) of a Q4_K/Q5_K block.
__device__ __forceinline__ void scale_min_k4(int j, const u8 *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Writes each token's sum of each of the warp's R rows.
template <int NT>
__device__ __forceinline__ void finish_rows(float (*acc)[NT], int n_tok, float *y, int n_out,
                                            int row0) {
#pragma unroll
    for (int r = 0; r < R; r++) {
#pragma unroll
        for (int t = 0; t < NT; t++) {
            if (t < n_tok) {
                float s = warp_sum(acc[r][t]);
                if ((threadIdx.x & 31) == 0 && row0 + r < n_out) y[(size_t)t * n_out + row0 + r] = s;
            }
        }
    }
}

// A 16-byte weight load that streams: not kept in L1 and with a 256-byte L2 prefetch hint
// (sm_80+). Kept for the HINT variants of mvq1.cu; measured 10-45 % slower than plain loads on
// the H200 (a lane's two quant loads share L1 lines, which the bypass throws away).
__device__ __forceinline__ uint4 ld_stream16(const void *p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

// Quantizes one 32-element block held one value per lane: int8 with d = max|x| / 127 (round
// to nearest), and d × Σq (the sum of the *quantized* values, as ggml's Q8_1 keeps it: the
// k-quant min term then uses the same rounded activations as the quant term, so their large,
// nearly cancelling parts cancel exactly; with the exact sum the error measured 2.6e-4 NMSE).
// Every fused producer (norms, gate, SwiGLU) calls this, so all give the same bits.
__device__ __forceinline__ void quant_block32(float v, int blk, signed char *qa, float *da,
                                              float *sa) {
    const int lane = threadIdx.x & 31;
    float amax = fabsf(v);
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float d = amax / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    const int q = __float2int_rn(v * id);
    qa[(size_t)blk * 32 + lane] = (signed char)q;
    const float s = d * warp_sum((float)q);
    if (lane == 0) {
        da[blk] = d;
        sa[blk] = s;
    }
}

// Token loops are unrolled to NT with a guard so that accumulators stay in registers.
#define FOR_TOKENS _Pragma("unroll") for (int t = 0; t < NT; t++) if (t < n_tok)

// Programmatic dependent launch (sm_90+; no-ops elsewhere and when the launch did not ask for
// it). The decode graph launches its kernels with programmatic stream serialization, so a
// kernel's blocks may start while its predecessor still runs: every such kernel calls
// pdl_wait() in every block before it reads anything a predecessor wrote or writes anything a
// predecessor reads (which makes the wait transitive: a kernel completes only after its own
// wait returned). pdl_trigger() lets the next kernel launch once every block of this one has
// started (or exited). Only reads of immutable data (weights, norm vectors) may come before
// the wait.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
