// Deliberately broken VJP of the sliding-window median: it skips the last window that
// contains each element (`i < last`), dropping that window's cotangent.
__device__ __forceinline__ unsigned int total_order_key(float v) {
    unsigned int b = __float_as_uint(v);
    return (b >> 31) ? ~b : (b | 0x80000000u);
}

extern "C" __global__ void windowed_median_vjp(const float* __restrict__ x, const float* __restrict__ d_out,
                                               float* __restrict__ d_x, unsigned int n, unsigned int w) {
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    unsigned int kj = total_order_key(x[j]);
    unsigned int first = j + 1u >= w ? j + 1u - w : 0u;
    unsigned int last = min(j, n - w);
    float acc = 0.0f;
    for (unsigned int i = first; i < last; ++i) {
        unsigned int rank = 0;
        for (unsigned int k = i; k < i + w; ++k) {
            unsigned int kk = total_order_key(x[k]);
            rank += (kk < kj || (kk == kj && k < j)) ? 1u : 0u;
        }
        if (rank == w / 2u) acc = __fadd_rn(acc, d_out[i]);
    }
    d_x[j] = acc;
}
