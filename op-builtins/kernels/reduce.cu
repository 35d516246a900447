// builtin/sum (`sum_kernel`), builtin/mean (`mean_kernel`) and builtin/mse_loss
// (`mse_loss_kernel`): a grid of blocks of 256 threads (the contract launches 512). Thread t of
// the grid sums the terms t, t + T, t + 2T, ... (T threads in all) pairwise: units of 8 such
// terms summed as a balanced tree, pushed on a binary counter. Each block then sums its
// threads' partial sums as a tree in shared memory and stores it; the last block to finish
// (a counter in device memory, the CUDA "threadfence reduction") sums the blocks' partials,
// again pairwise, and writes the result. Every term is rounded at most about ceil(log2 n) + 2
// times (+3 for mse_loss: subtract, square, divide), within `accum`'s pairwise bound on any
// input. Non-finite terms are kept out of the sum and decide the result (see `pairwise.cuh`).
// The counter returns to 0 at the end of every launch (atomicInc wraps), and launches on the
// engine's one stream never overlap.
#include "pairwise.cuh"

#define WG 256u
#define MAX_BLOCKS 1024u

__device__ float block_partial[MAX_BLOCKS];
__device__ unsigned int block_flags[MAX_BLOCKS];
__device__ unsigned int blocks_done;

// The sum of `term(i)` over i < n, finished (NaN or an infinity where the terms say so); valid
// in thread 0 of the last block only, where `*last` is set. At most MAX_BLOCKS blocks.
template <typename Term>
__device__ float grid_total(unsigned int n, Term term, bool* last) {
    __shared__ float part[WG];
    __shared__ unsigned int wflags[WG];
    __shared__ bool is_last;
    Pairwise acc;
    NonFinite nf;
    const unsigned int stride = WG * gridDim.x;
    unsigned int i = blockIdx.x * WG + threadIdx.x;
    float unit[8];
    for (; i + 7u * stride < n && i + 7u * stride > i; i += 8u * stride) {
        for (unsigned int t = 0; t < 8u; ++t) unit[t] = nf.fin(term(i + t * stride));
        acc.push(tree8(unit));
    }
    for (; i < n; i += stride) acc.push(nf.fin(term(i)));
    block_tree<WG>(acc.total(), nf.flags, part, wflags);
    if (threadIdx.x == 0u) {
        block_partial[blockIdx.x] = part[0];
        block_flags[blockIdx.x] = wflags[0];
        __threadfence();
        is_last = atomicInc(&blocks_done, gridDim.x - 1u) == gridDim.x - 1u;
    }
    __syncthreads();
    *last = is_last;
    if (!is_last) return 0.0f;
    Pairwise blocks;
    unsigned int flags = 0u;
    for (unsigned int b = threadIdx.x; b < gridDim.x; b += WG) {
        blocks.push(((volatile float*)block_partial)[b]);
        flags |= ((volatile unsigned int*)block_flags)[b];
    }
    block_tree<WG>(blocks.total(), flags, part, wflags);
    return finish_sum(wflags[0], part[0]);
}

extern "C" __global__ void sum_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    bool last;
    float t = grid_total(n, [&](unsigned int i) { return x[i]; }, &last);
    if (last && threadIdx.x == 0u) out[0] = t;
}

extern "C" __global__ void mean_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    // Terms scaled by 2^-s, s = ceil(log2 n): no partial sum of finite terms overflows where
    // the mean is finite; exact but for terms below 2^(s - 126) (see sum.wgsl's mean_main).
    const unsigned int s = n > 1u ? 32u - __clz(n - 1u) : 0u;
    const float down = __int_as_float((int)((127u - s) << 23));
    const float up = __int_as_float((int)((127u + s) << 23));
    bool last;
    float t = grid_total(n, [&](unsigned int i) { return __fmul_rn(x[i], down); }, &last);
    if (last && threadIdx.x == 0u) out[0] = __fmul_rn(t / (float)n, up);
}

extern "C" __global__ void mse_loss_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                           unsigned int n) {
    bool last;
    float t = grid_total(n, [&](unsigned int i) {
        float d = a[i] - b[i];
        return __fmul_rn(d, d);
    }, &last);
    if (last && threadIdx.x == 0u) out[0] = t / (float)n;
}
