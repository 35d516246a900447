// builtin/take_along and its VJP (the CUDA twins of `take_along.wgsl` and
// `take_along_vjp.wgsl`): an indexed copy, one thread per output element, and a gather of the
// cotangents, one thread per input element, adding in the rule's order with IEEE addition
// (NVRTC's defaults keep subnormals), so its sums are the rule's bits. An index past a row's
// end reads the row's last element (as gather).

extern "C" __global__ void take_along_kernel(const float* __restrict__ x, const unsigned int* __restrict__ idx, float* __restrict__ out,
                                             unsigned int r, unsigned int c, unsigned int k) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < r * k) out[t] = x[(t / k) * c + min(idx[t], c - 1u)];
}

extern "C" __global__ void take_along_vjp(const float* __restrict__ x, const unsigned int* __restrict__ idx,
                                          const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int r, unsigned int c,
                                          unsigned int k) {
    unsigned int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= r * c) return;
    unsigned int j = e % c, base = (e / c) * k;
    float acc = 0.0f;
    for (unsigned int t = 0; t < k; ++t)
        if (min(idx[base + t], c - 1u) == j) acc = __fadd_rn(acc, d_out[base + t]);
    d_x[e] = acc;
}
