// builtin/maximum, builtin/minimum and their VJPs (the CUDA twins of `binary_lib.wgsl` and
// `binary_lib_vjp.wgsl`): IEEE total order on the bits, NaN winning (a's first). One thread
// per element, flat grid.

#include "takes_first.cuh"

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
