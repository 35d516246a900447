// builtin/maximum, builtin/minimum and their VJPs (the CUDA twins of `binary_lib.wgsl` and
// `binary_lib_vjp.wgsl`): IEEE total order on the bits, NaN winning (a's first). One thread
// per element, flat grid.

__device__ __forceinline__ unsigned int total_order_key(float v) {
    unsigned int b = __float_as_uint(v);
    return (b >> 31) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ bool is_nan_bits(float v) { return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u; }

__device__ __forceinline__ bool takes_first(float x, float y, bool larger) {
    if (is_nan_bits(x)) return true;
    if (is_nan_bits(y)) return false;
    unsigned int kx = total_order_key(x), ky = total_order_key(y);
    return larger ? kx >= ky : kx <= ky;
}

extern "C" __global__ void maximum_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                          unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = takes_first(a[i], b[i], true) ? a[i] : b[i];
}

extern "C" __global__ void minimum_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                          unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = takes_first(a[i], b[i], false) ? a[i] : b[i];
}

extern "C" __global__ void maximum_vjp(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ d_out,
                                       float* __restrict__ d_a, float* __restrict__ d_b, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    bool on_a = takes_first(a[i], b[i], true);
    d_a[i] = on_a ? d_out[i] : 0.0f;
    d_b[i] = on_a ? 0.0f : d_out[i];
}

extern "C" __global__ void minimum_vjp(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ d_out,
                                       float* __restrict__ d_a, float* __restrict__ d_b, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    bool on_a = takes_first(a[i], b[i], false);
    d_a[i] = on_a ? d_out[i] : 0.0f;
    d_b[i] = on_a ? 0.0f : d_out[i];
}
