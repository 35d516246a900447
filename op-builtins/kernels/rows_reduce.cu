// builtin/sum_rows, mean_rows, max_rows, min_rows, argmax_rows and the VJPs (the CUDA twins of
// `rows_reduce.wgsl`, `rows_reduce_vjp.wgsl`, `rows_select.wgsl`, `rows_argmax.wgsl` and
// `rows_select_vjp.wgsl`): one thread per row (the sum VJPs one per element), flat grid. Sums
// are pairwise (units of 8 consecutive terms as a tree, on a binary counter: `pairwise.cuh`)
// with non-finite terms kept apart, the terms scaled by 2^-k, 2^k >= c, so no partial sum
// overflows where the exact sum does not (scaled back at the end, exact). Selections scan
// total-order keys: the largest, the last of equal ones; or the smallest, the first.
#include "pairwise.cuh"

__device__ __forceinline__ unsigned int total_order_key(float v) {
    unsigned int b = __float_as_uint(v);
    return (b >> 31) ? ~b : (b | 0x80000000u);
}

// 2^e (|e| <= 126).
__device__ __forceinline__ float pow2(int e) { return __uint_as_float((unsigned int)(127 + e) << 23); }

// k with 2^k >= c (0 for c <= 1).
__device__ __forceinline__ int scale_exp(unsigned int c) { return c <= 1u ? 0 : 32 - __clz(c - 1u); }

// The sum of row `row` (c terms, each scaled by 2^-k), finished.
__device__ float row_total(const float* __restrict__ x, unsigned int row, unsigned int c, int k) {
    const float* base = x + (size_t)row * c;
    const float sd = pow2(-k);
    Pairwise acc;
    NonFinite nf;
    float unit[8];
    unsigned int i = 0;
    for (; i + 7u < c; i += 8u) {
        for (unsigned int t = 0; t < 8u; ++t) unit[t] = __fmul_rn(sd, nf.fin(base[i + t]));
        acc.push(tree8(unit));
    }
    for (; i < c; ++i) acc.push(__fmul_rn(sd, nf.fin(base[i])));
    return finish_sum(nf.flags, acc.total());
}

extern "C" __global__ void sum_rows(const float* __restrict__ x, float* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= r) return;
    int k = scale_exp(c);
    out[row] = __fmul_rn(row_total(x, row, c, k), pow2(k));
}

extern "C" __global__ void mean_rows(const float* __restrict__ x, float* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= r) return;
    int k = scale_exp(c);
    out[row] = __fmul_rn(row_total(x, row, c, k) / (float)c, pow2(k));
}

extern "C" __global__ void sum_rows_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                        unsigned int r, unsigned int c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < r * c) d_x[i] = d_out[i / c];
}

extern "C" __global__ void mean_rows_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                         unsigned int r, unsigned int c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < r * c) d_x[i] = d_out[i / c] / (float)c;
}

// The selected position of row `row` (c >= 1 elements).
__device__ unsigned int row_select(const float* __restrict__ x, unsigned int row, unsigned int c, bool larger) {
    const float* base = x + (size_t)row * c;
    unsigned int best = 0u, kb = total_order_key(base[0]);
    for (unsigned int j = 1; j < c; ++j) {
        unsigned int k = total_order_key(base[j]);
        if (larger ? k >= kb : k < kb) {
            best = j;
            kb = k;
        }
    }
    return best;
}

extern "C" __global__ void max_rows(const float* __restrict__ x, float* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < r) out[row] = x[(size_t)row * c + row_select(x, row, c, true)];
}

extern "C" __global__ void min_rows(const float* __restrict__ x, float* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < r) out[row] = x[(size_t)row * c + row_select(x, row, c, false)];
}

extern "C" __global__ void argmax_rows(const float* __restrict__ x, unsigned int* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < r) out[row] = row_select(x, row, c, true);
}

__device__ void route(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int r,
                      unsigned int c, bool larger) {
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= r) return;
    unsigned int at = row_select(x, row, c, larger);
    for (unsigned int j = 0; j < c; ++j) d_x[(size_t)row * c + j] = j == at ? d_out[row] : 0.0f;
}

extern "C" __global__ void max_rows_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                        unsigned int r, unsigned int c) {
    route(x, d_out, d_x, r, c, true);
}

extern "C" __global__ void min_rows_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                        unsigned int r, unsigned int c) {
    route(x, d_out, d_x, r, c, false);
}
