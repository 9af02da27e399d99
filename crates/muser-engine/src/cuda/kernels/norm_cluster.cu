// The cluster norm tail launches (sm_90; their code in norm_tail.cuh, appended to decode.cu at
// compile time).
extern "C" __global__ void __launch_bounds__(1024) norm_tail_q8_cl(
    float *x, const float *o, const float *wp, float eps_post, const float *wn, float eps,
    float *h, signed char *qa, float *da, float *sa, int n, int mode) {
    norm_tail_cl<false>(x, x, o, wp, eps_post, wn, eps, h, qa, da, sa, n, mode, blockIdx.x);
}

extern "C" __global__ void __launch_bounds__(1024) norm_tail_q8_cl1(
    float *x, const float *o, const float *wp, float eps_post, const float *wn, float eps,
    float *h, signed char *qa, float *da, float *sa, int n, int mode) {
    norm_tail_cl<true>(x, x, o, wp, eps_post, wn, eps, h, qa, da, sa, n, mode, blockIdx.x);
}
