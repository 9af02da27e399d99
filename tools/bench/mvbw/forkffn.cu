// forkffn: can the FFN's launch boundary be hidden by splitting it along the intermediate
// dimension into P independent pieces on parallel branches of the graph? Piece p is gate/up
// rows [p F / P, (p + 1) F / P) with SwiGLU and quantization, then the down projection over
// those input columns only (a partial row, E outputs); piece p's down needs only piece p's
// gate/up, so while one piece's gate/up drains, another's still streams, and the first down
// starts under it. chain.cu's token (52 layers of distinct Q4_K weights, DRAM-cold; its
// latency-bound stand-ins) with the FFN as: the plain two launches; the P pieces in one stream;
// the P pieces as P branches forked after the norm and joined before the next; and the plain
// FFN with only its down launched on a side branch (what a fork and join cost alone). The
// partial rows are not summed (timing only: the next norm reads the first), so only the
// plain variants are compared bit for bit. Built and run on the device:
//   bash tools/bench/mvbw/run.sh OUT forkffn
#define CHAIN_NO_MAIN
#define CHAIN_NO_TL
#include "chain.cu"

struct Fork {
    cudaStream_t side[32];
    cudaEvent_t ev[64];
    int next = 0;
    float *parts[32];
    cudaEvent_t get() { return ev[next++ % 64]; }
};

// The FFN of layer l (after its second norm stand-in) in `mode`: 0 the plain launches, 1 the P
// pieces in stream st, 2 the P pieces on P branches (piece 0 on st), 3 the plain gate/up on
// st and the plain down on a side branch.
static void ffn(const Chain &c, cudaStream_t st, Fork &f, int l, int mode, int P) {
    const int E = Chain::E, F = Chain::F;
    const u8 *w = c.W + c.per * l + c.s_qkvg + c.s_o;
    const u8 *wg = w, *wu = w + c.s_f, *wd = w + 2 * c.s_f;
    signed char *qa = c.qa[3];
    float *da = c.da[3], *sa = c.sa[3];
    const signed char *qi = c.qa[2];
    const float *di = c.da[2], *si = c.sa[2];
    if (mode == 0 || mode == 3) {
        launch(st, false, gu<0>, F / 32, 128, wg, wu, F, qi, di, si, E, qa, da, sa, 0);
        cudaStream_t s = st;
        if (mode == 3) {
            cudaEvent_t ev = f.get();
            CK(cudaEventRecord(ev, st));
            s = f.side[0];
            CK(cudaStreamWaitEvent(s, ev, 0));
        }
        launch(s, false, mv<0>, E / 16, 128, wd, E, F, (const signed char *)qa, (const float *)da,
               (const float *)sa, c.y3, 0);
        if (mode == 3) {
            cudaEvent_t ev = f.get();
            CK(cudaEventRecord(ev, s));
            CK(cudaStreamWaitEvent(st, ev, 0));
        }
        return;
    }
    const int fp = F / P;                   // intermediate values per piece
    const size_t gu_off = (size_t)fp * 3744;  // bytes of fp gate (or up) rows of 26 super-blocks
    const size_t d_bytes = (size_t)E * (fp / 256) * 144;  // piece p's down columns, E rows
    cudaEvent_t fork = f.get();
    if (mode == 2) CK(cudaEventRecord(fork, st));
    for (int p = 0; p < P; p++) {
        cudaStream_t s = st;
        if (mode == 2 && p > 0) {
            s = f.side[p - 1];
            CK(cudaStreamWaitEvent(s, fork, 0));
        }
        launch(s, false, gu<0>, fp / 32, 128, wg + p * gu_off, wu + p * gu_off, fp, qi, di, si, E,
               qa + p * fp, da + p * fp / 32, sa + p * fp / 32, 0);
        if (mode == 1) continue;
        launch(s, false, mv<0>, E / 16, 128, wd + p * d_bytes, E, fp,
               (const signed char *)(qa + p * fp), (const float *)(da + p * fp / 32),
               (const float *)(sa + p * fp / 32), p == 0 ? c.y3 : f.parts[p], 0);
    }
    if (mode == 1) {
        for (int p = 0; p < P; p++)
            launch(st, false, mv<0>, E / 16, 128, wd + p * d_bytes, E, fp,
                   (const signed char *)(qa + p * fp), (const float *)(da + p * fp / 32),
                   (const float *)(sa + p * fp / 32), p == 0 ? c.y3 : f.parts[p], 0);
        return;
    }
    for (int p = 1; p < P; p++) {
        cudaEvent_t ev = f.get();
        CK(cudaEventRecord(ev, f.side[p - 1]));
        CK(cudaStreamWaitEvent(st, ev, 0));
    }
}

// Layer l: chain_layer's first five launches (with Q > 1 the attention block in Q pieces on
// branches: Q/K/V/gate rows [q R / Q, (q + 1) R / Q), the attention stand-in over its share of
// the output, the output projection over those input columns as a partial row), then the FFN
// in `mode`.
static void layer(const Chain &c, cudaStream_t st, Fork &f, int l, int mode, int P, int Q) {
    const int E = Chain::E, QKVG = Chain::QKVG, QD = Chain::QD;
    const u8 *w = c.W + c.per * l;
    signed char *const *qa = c.qa;
    float *const *da = c.da, *const *sa = c.sa;
    launch(st, false, lat_norm, 1, 1024, (const float *)c.y3, c.x, E, qa[0], da[0], sa[0], 0);
    if (Q == 1) {
        launch(st, false, mv<0>, QKVG / 16, 128, w, QKVG, E, (const signed char *)qa[0],
               (const float *)da[0], (const float *)sa[0], c.y1, 0);
        launch(st, false, lat_quant, 1, 1024, (const float *)c.y1, QD, qa[1], da[1], sa[1], 0);
        launch(st, false, mv<0>, E / 16, 128, w + c.s_qkvg, E, QD, (const signed char *)qa[1],
               (const float *)da[1], (const float *)sa[1], c.y2, 0);
    } else {
        const int rq = QKVG / Q, dq = QD / Q;
        const size_t o_bytes = (size_t)E * (dq / 256) * 144;
        cudaEvent_t fork = f.get();
        CK(cudaEventRecord(fork, st));
        for (int q = 0; q < Q; q++) {
            cudaStream_t s = st;
            if (q > 0) {
                s = f.side[q - 1];
                CK(cudaStreamWaitEvent(s, fork, 0));
            }
            launch(s, false, mv<0>, rq / 16, 128, w + (size_t)q * rq * 3744, rq, E,
                   (const signed char *)qa[0], (const float *)da[0], (const float *)sa[0],
                   c.y1 + q * rq, 0);
            launch(s, false, lat_quant, 1, 1024, (const float *)(c.y1 + q * rq), dq,
                   qa[1] + q * dq, da[1] + q * dq / 32, sa[1] + q * dq / 32, 0);
            launch(s, false, mv<0>, E / 16, 128, w + c.s_qkvg + q * o_bytes, E, dq,
                   (const signed char *)(qa[1] + q * dq), (const float *)(da[1] + q * dq / 32),
                   (const float *)(sa[1] + q * dq / 32), q == 0 ? c.y2 : f.parts[q], 0);
        }
        for (int q = 1; q < Q; q++) {
            cudaEvent_t ev = f.get();
            CK(cudaEventRecord(ev, f.side[q - 1]));
            CK(cudaStreamWaitEvent(st, ev, 0));
        }
    }
    launch(st, false, lat_norm, 1, 1024, (const float *)c.y2, c.x, E, qa[2], da[2], sa[2], 0);
    ffn(c, st, f, l, mode, P);
}

int main() {
    const Chain c = chain_alloc();
    const int L = Chain::L, E = Chain::E;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    Fork f;
    for (auto &s : f.side) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (auto &ev : f.ev) CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    for (auto &p : f.parts) CK(cudaMalloc(&p, E * 4));
    const double bytes = (double)c.per * L;
    printf("weights %.2f GB per token (%d layers), at 4.5 TB/s: %.3f ms\n", bytes * 1e-9, L,
           bytes / 4.5e12 * 1e3);
    std::vector<float> ref;
    auto run = [&](const char *name, int mode, int P, int Q) {
        std::vector<float> out;
        cudaGraphExec_t ge = chain_graph(c, st, [&](cudaStream_t s) {
            for (int l = 0; l < L; l++) layer(c, s, f, l, mode, P, Q);
        }, out);
        if (ref.empty()) ref = out;
        int diff = 0;
        for (int i = 0; i < E; i++) diff += memcmp(&out[i], &ref[i], 4) != 0;
        const double ms = median_ms(st, 10, [&](int) { CK(cudaGraphLaunch(ge, st)); });
        printf("%-44s P %2d Q %d  %7.3f ms/token  %7.1f GB/s  (%.2f us/layer)  %d of %d differ from plain\n",
               name, P, Q, ms, bytes / ms * 1e-6, ms * 1000 / L, diff, E);
        CK(cudaGraphExecDestroy(ge));
    };
    for (int round = 0; round < 3; round++) {
        run("plain", 0, 1, 1);
        run("FFN pieces on branches", 2, 6, 1);
        run("FFN pieces on branches", 2, 13, 1);
        run("FFN pieces on branches", 2, 26, 1);
        run("attention block pieces", 0, 1, 2);
        run("attention block pieces", 0, 1, 4);
        run("FFN and attention block pieces", 2, 6, 2);
        run("FFN and attention block pieces", 2, 13, 2);
    }
    return 0;
}
