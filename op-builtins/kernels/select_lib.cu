// builtin/greater, less, equal, where and where's VJP (the CUDA twins of `compare.wgsl`,
// `where.wgsl` and `where_vjp.wgsl`): IEEE comparisons decided on the bits. One thread per
// element, flat grid.

__device__ __forceinline__ bool is_nan_bits(float v) { return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u; }

// The total-order key with -0 taken as +0.
__device__ __forceinline__ unsigned int ieee_key(float v) {
    unsigned int b = __float_as_uint(v);
    if ((b & 0x7fffffffu) == 0u) b = 0u;
    return (b >> 31) ? ~b : (b | 0x80000000u);
}

// -1, 0 or 1; 2 when unordered.
__device__ __forceinline__ int compare(float x, float y) {
    if (is_nan_bits(x) || is_nan_bits(y)) return 2;
    unsigned int kx = ieee_key(x), ky = ieee_key(y);
    return kx < ky ? -1 : (kx > ky ? 1 : 0);
}

extern "C" __global__ void greater_kernel(const float* __restrict__ a, const float* __restrict__ b, unsigned int* __restrict__ out,
                                          unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = compare(a[i], b[i]) == 1 ? 1u : 0u;
}

extern "C" __global__ void less_kernel(const float* __restrict__ a, const float* __restrict__ b, unsigned int* __restrict__ out,
                                       unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = compare(a[i], b[i]) == -1 ? 1u : 0u;
}

extern "C" __global__ void equal_kernel(const float* __restrict__ a, const float* __restrict__ b, unsigned int* __restrict__ out,
                                        unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = compare(a[i], b[i]) == 0 ? 1u : 0u;
}

extern "C" __global__ void where_kernel(const unsigned int* __restrict__ cond, const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = cond[i] != 0u ? a[i] : b[i];
}

extern "C" __global__ void where_vjp(const unsigned int* __restrict__ cond, const float* __restrict__ a, const float* __restrict__ b,
                                     const float* __restrict__ d_out, float* __restrict__ d_a, float* __restrict__ d_b, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    bool on_a = cond[i] != 0u;
    d_a[i] = on_a ? d_out[i] : 0.0f;
    d_b[i] = on_a ? 0.0f : d_out[i];
}
