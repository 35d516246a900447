// builtin/sort_rows, builtin/median_rows and their VJPs (the CUDA twins of `rows_order.wgsl`
// and `rows_order_vjp.wgsl`): every element ranks itself within its row by (total-order key,
// index), the reference's stable order, in O(c) work. One thread per element, flat grid.

// Unsigned comparison of keys is IEEE 754 total order; equal keys are equal bits.
__device__ __forceinline__ unsigned int total_order_key(float v) {
    unsigned int b = __float_as_uint(v);
    return (b >> 31) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ unsigned int rank_in_row(const float* __restrict__ x, unsigned int row, unsigned int j, unsigned int c) {
    const float* base = x + (size_t)row * c;
    unsigned int kj = total_order_key(base[j]);
    unsigned int rank = 0u;
    for (unsigned int k = 0; k < c; ++k) {
        unsigned int kk = total_order_key(base[k]);
        rank += (kk < kj || (kk == kj && k < j)) ? 1u : 0u;
    }
    return rank;
}

extern "C" __global__ void sort_rows(const float* __restrict__ x, float* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= r * c) return;
    unsigned int row = i / c;
    out[row * c + rank_in_row(x, row, i - row * c, c)] = x[i];
}

extern "C" __global__ void median_rows(const float* __restrict__ x, float* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= r * c) return;
    unsigned int row = i / c;
    if (rank_in_row(x, row, i - row * c, c) == (c - 1u) / 2u) out[row] = x[i];
}

extern "C" __global__ void sort_rows_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                         unsigned int r, unsigned int c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= r * c) return;
    unsigned int row = i / c;
    d_x[i] = d_out[row * c + rank_in_row(x, row, i - row * c, c)];
}

extern "C" __global__ void median_rows_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                           unsigned int r, unsigned int c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= r * c) return;
    unsigned int row = i / c;
    d_x[i] = rank_in_row(x, row, i - row * c, c) == (c - 1u) / 2u ? d_out[row] : 0.0f;
}
