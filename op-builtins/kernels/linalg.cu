// builtin/matmul (`matmul`) and builtin/conv1d (`conv1d`): products formed with `__fmul_rn`
// (never fused, so an overflowing product is seen) and summed pairwise (see `pairwise.cuh`):
// every product is rounded at most about ceil(log2 k) + 1 times, within `accum`'s bound.
#include "pairwise.cuh"

#define TILE 16u

// out[i, j] = sum_p a[i, p] b[p, j], row-major: one block of 256 threads per 16 x 16 tile of
// the output (blocks numbered along rows of tiles), one thread per output element. Each step
// loads a 16 x 16 tile of `a` and of `b` into shared memory and pushes the sum of the tile's 16
// products of its row and column (a balanced tree) as one unit; the products past the last
// whole tile are pushed one by one. The same arithmetic, in the same order, as the WGSL kernel.
extern "C" __global__ void matmul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                  unsigned int m, unsigned int k, unsigned int n) {
    __shared__ float ta[TILE * TILE];  // ta[r * 16 + c] = a[row r of the tile, column q0 + c]
    __shared__ float tb[TILE * TILE];  // tb[r * 16 + c] = b[row q0 + r, column c of the tile]
    unsigned int tiles_n = (n + TILE - 1u) / TILE;
    unsigned int tile = blockIdx.x;
    if (tile >= ((m + TILE - 1u) / TILE) * tiles_n) return;  // the whole block leaves
    unsigned int lid = threadIdx.x;
    unsigned int r = lid / TILE, c = lid % TILE;
    unsigned int i = (tile / tiles_n) * TILE + r;
    unsigned int j = (tile % tiles_n) * TILE + c;
    Pairwise acc;
    NonFinite nf;
    float prod[TILE];
    for (unsigned int q0 = 0; q0 < k; q0 += TILE) {
        ta[lid] = (i < m && q0 + c < k) ? a[(size_t)i * k + q0 + c] : 0.0f;
        tb[lid] = (j < n && q0 + r < k) ? b[(size_t)(q0 + r) * n + j] : 0.0f;
        __syncthreads();
        if (q0 + TILE <= k) {
            for (unsigned int t = 0; t < TILE; ++t) prod[t] = nf.fin_prod(ta[r * TILE + t], tb[t * TILE + c]);
            acc.push(tree16(prod));
        } else {
            for (unsigned int t = 0; q0 + t < k; ++t) acc.push(nf.fin_prod(ta[r * TILE + t], tb[t * TILE + c]));
        }
        __syncthreads();
    }
    if (i < m && j < n) out[(size_t)i * n + j] = finish_sum(nf.flags, acc.total());
}

// out[i] = sum_j x[i + j] w[j] (valid correlation): one thread per output; units of 16
// consecutive products summed as a balanced tree, the rest pushed one by one.
extern "C" __global__ void conv1d(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                                  unsigned int n, unsigned int m) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n - m + 1u) return;
    Pairwise acc;
    NonFinite nf;
    float prod[16];
    unsigned int j = 0;
    for (; j + 15u < m; j += 16u) {
        for (unsigned int t = 0; t < 16u; ++t) prod[t] = nf.fin_prod(x[i + j + t], w[j + t]);
        acc.push(tree16(prod));
    }
    for (; j < m; ++j) acc.push(nf.fin_prod(x[i + j], w[j]));
    out[i] = finish_sum(nf.flags, acc.total());
}
