// The shape built-ins and their VJPs (the CUDA twins of `shape.wgsl`, `copy_vjp.wgsl`,
// `flatten.wgsl`, `transpose2d.wgsl`, `shape_vjp.wgsl`, `slice*.wgsl`, `concat*.wgsl`,
// `gather*.wgsl` and `broadcast_to*.wgsl`): indexed copies, one thread per element, flat grid;
// the VJPs of gather and broadcast_to add in the rules' order with IEEE addition (NVRTC's
// defaults keep subnormals), so their sums are the rules' bits.

extern "C" __global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
}

extern "C" __global__ void reshape_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                       unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d_x[i] = d_out[i];
}

extern "C" __global__ void flatten_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < r * c) out[i] = x[i];
}

extern "C" __global__ void flatten_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                       unsigned int r, unsigned int c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < r * c) d_x[i] = d_out[i];
}

extern "C" __global__ void transpose_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int r, unsigned int c) {
    unsigned int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < r * c) out[k] = x[(k % r) * c + k / r];
}

extern "C" __global__ void transpose_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                         unsigned int r, unsigned int c) {
    unsigned int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < r * c) d_x[e] = d_out[(e % c) * r + e / c];
}

extern "C" __global__ void slice_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n, unsigned int start,
                                        unsigned int stop, unsigned int step) {
    unsigned int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < (stop - start + step - 1u) / step) out[k] = x[start + k * step];
}

extern "C" __global__ void slice_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                     unsigned int n, unsigned int start, unsigned int stop, unsigned int step) {
    unsigned int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n) return;
    d_x[q] = (q >= start && q < stop && (q - start) % step == 0u) ? d_out[(q - start) / step] : 0.0f;
}

extern "C" __global__ void concat_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                         unsigned int n, unsigned int m) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n + m) out[i] = i < n ? a[i] : b[i - n];
}

extern "C" __global__ void concat_vjp(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ d_out,
                                      float* __restrict__ d_a, float* __restrict__ d_b, unsigned int n, unsigned int m) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n + m) return;
    if (i < n) d_a[i] = d_out[i]; else d_b[i - n] = d_out[i];
}

extern "C" __global__ void gather_kernel(const float* __restrict__ x, const unsigned int* __restrict__ idx, float* __restrict__ out,
                                         unsigned int n, unsigned int m) {
    unsigned int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < m) out[k] = x[min(idx[k], n - 1u)];
}

extern "C" __global__ void gather_vjp(const float* __restrict__ x, const unsigned int* __restrict__ idx, const float* __restrict__ d_out,
                                      float* __restrict__ d_x, unsigned int n, unsigned int m) {
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float acc = 0.0f;
    for (unsigned int k = 0; k < m; ++k)
        if (min(idx[k], n - 1u) == j) acc = __fadd_rn(acc, d_out[k]);
    d_x[j] = acc;
}

extern "C" __global__ void broadcast_to_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int p, unsigned int q,
                                               unsigned int m) {
    unsigned int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < p * m * q) out[e] = x[(e / (m * q)) * q + e % q];
}

extern "C" __global__ void broadcast_to_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                            unsigned int p, unsigned int q, unsigned int m) {
    unsigned int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= p * q) return;
    unsigned int base = (e / q) * m * q + e % q;
    float acc = 0.0f;
    for (unsigned int k = 0; k < m; ++k) acc = __fadd_rn(acc, d_out[base + k * q]);
    d_x[e] = acc;
}
