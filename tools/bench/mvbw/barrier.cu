// barrier: what one grid-wide barrier costs on the device, for a persistent decode kernel
// (bench/runs/2026-11-30-h200-n measured 1.8-3.4 µs per barrier in the chain prototype, more
// than the kernel boundary it replaces). One block per SM, all resident; each kernel passes
// N barriers back to back; µs per barrier from CUDA events. Variants:
//   atomic   thread 0 of every block adds to one counter and spins on it (chain.cu's gsync);
//   flags    every block raises its own flag, block 0's warp 0 gathers them and releases all;
//   cluster  the hardware cluster barrier first, then only the cluster leaders count in;
//   coop     cooperative_groups grid.sync() (the vendor's), launched cooperatively.
// Built and run on the device: bash tools/bench/mvbw/run.sh OUT barrier
// Measured (bench/runs/2026-11-30-h200-o o4, idle, 128-1,024 threads): atomic 0.94-0.99 µs,
// grid.sync 0.97-1.00, cluster + atomic 1.25-1.73, flags 2.7-3.1: above the ~0.8 µs a graph
// leaves between two kernels.
#include <algorithm>
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "../../../crates/muser-engine/src/cuda/kernels/common.cuh"
#include "bench.cuh"

namespace cg = cooperative_groups;

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Thread 0 of every block counts in on one counter; everyone waits for the target.
__global__ void bar_atomic(unsigned *ctr, int n) {
    unsigned target = 0;
    for (int i = 0; i < n; i++) {
        __syncthreads();
        target += gridDim.x;
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(ctr, 1u);
            while (ld_acquire(ctr) < target) {
            }
        }
        __syncthreads();
    }
}

// Every block stores generation i + 1 in its own flag (no contended atomic); block 0's warp 0
// waits for all flags (each lane watches every 32nd block), then stores the generation in the
// release word every block waits on.
__global__ void bar_flags(unsigned *flags, unsigned *release, int n) {
    for (int i = 0; i < n; i++) {
        const unsigned gen = (unsigned)i + 1;
        __syncthreads();
        if (threadIdx.x == 0) st_release(&flags[blockIdx.x * 32], gen);
        if (blockIdx.x == 0 && threadIdx.x < 32) {
            for (unsigned b = threadIdx.x; b < gridDim.x; b += 32)
                while (ld_acquire(&flags[b * 32]) < gen) {
                }
            __syncwarp();
            if (threadIdx.x == 0) st_release(release, gen);
        }
        if (threadIdx.x == 0)
            while (ld_acquire(release) < gen) {
            }
        __syncthreads();
    }
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// The cluster barrier, then one atomic per cluster (its rank-0 block), then the cluster
// barrier again so that the other blocks learn the leader has passed.
__global__ void bar_cluster(unsigned *ctr, int n, int clusters) {
    unsigned target = 0;
    const bool leader = cluster_rank() == 0;
    for (int i = 0; i < n; i++) {
        cluster_sync();
        target += clusters;
        if (leader && threadIdx.x == 0) {
            __threadfence();
            atomicAdd(ctr, 1u);
            while (ld_acquire(ctr) < target) {
            }
        }
        cluster_sync();
    }
}

__global__ void bar_coop(int n) {
    cg::grid_group g = cg::this_grid();
    for (int i = 0; i < n; i++) g.sync();
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    unsigned *ctr, *flags, *release;
    CK(cudaMalloc(&ctr, 4));
    CK(cudaMalloc(&flags, (size_t)sms * 32 * 4));
    CK(cudaMalloc(&release, 4));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    const int n = 2000;
    auto timed = [&](const char *name, int threads, auto launch) {
        std::vector<float> v;
        for (int rep = 0; rep < 5; rep++) {
            CK(cudaMemset(ctr, 0, 4));
            CK(cudaMemset(flags, 0, (size_t)sms * 32 * 4));
            CK(cudaMemset(release, 0, 4));
            CK(cudaEventRecord(a));
            launch();
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            v.push_back(ms * 1000.0f / n);
        }
        std::sort(v.begin(), v.end());
        printf("%-28s %4d threads: %.3f us per barrier (median of 5 x %d)\n", name, threads, v[2], n);
    };
    for (int threads : {128, 512, 1024}) {
        timed("atomic", threads, [&] { bar_atomic<<<sms, threads>>>(ctr, n); });
        timed("flags", threads, [&] { bar_flags<<<sms, threads>>>(flags, release, n); });
        for (int cl : {2, 4}) {
            if (sms % cl) continue;
            char name[32];
            snprintf(name, sizeof name, "cluster %d + atomic", cl);
            cudaLaunchConfig_t c = {};
            c.gridDim = dim3(sms);
            c.blockDim = dim3(threads);
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeClusterDimension;
            at[0].val.clusterDim.x = cl;
            at[0].val.clusterDim.y = 1;
            at[0].val.clusterDim.z = 1;
            c.attrs = at;
            c.numAttrs = 1;
            // Every cluster must be resident at once, or the spinning barrier never opens.
            int active = 0;
            CK(cudaOccupancyMaxActiveClusters(&active, bar_cluster, &c));
            if (active < sms / cl) {
                printf("%-28s %4d threads: skipped, %d of %d clusters resident at once\n", name,
                       threads, active, sms / cl);
                continue;
            }
            timed(name, threads, [&] { CK(cudaLaunchKernelEx(&c, bar_cluster, ctr, n, sms / cl)); });
        }
        timed("cooperative grid.sync", threads, [&] {
            int nn = n;
            void *args[] = {&nn};
            CK(cudaLaunchCooperativeKernel((void *)bar_coop, dim3(sms), dim3(threads), args, 0, 0));
        });
    }
    return 0;
}
