// builtin/permute3, builtin/permute4 and their VJPs (the CUDA twins of `permute3*.wgsl`,
// `permute4*.wgsl` and `lib/permute.wgsl`): indexed copies, one thread per element, flat grid,
// at rank 4 (a rank-3 op pads a trailing axis of one element that stays last: d3 = 1, p3 = 3).
// Output axis k of a permuted tensor is input axis perm[k].

// The row-major input index that output element `t` of `x` (dims `d`) permuted by `perm` copies.
__device__ unsigned int permuted_source(unsigned int t, const unsigned int d[4], const unsigned int perm[4]) {
    const unsigned int stride[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1u};
    unsigned int at = 0u;
    for (int k = 3; k >= 0; --k) {
        unsigned int n = d[perm[k]];
        at += (t % n) * stride[perm[k]];
        t /= n;
    }
    return at;
}

// d_x[e]: the cotangent (dims d permuted) permuted back by the inverse permutation.
__device__ unsigned int unpermuted_source(unsigned int e, const unsigned int d[4], const unsigned int perm[4]) {
    unsigned int od[4], inv[4];
    for (int k = 0; k < 4; ++k) {
        od[k] = d[perm[k]];
        inv[perm[k]] = (unsigned int)k;
    }
    return permuted_source(e, od, inv);
}

extern "C" __global__ void permute3_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int d0, unsigned int d1,
                                           unsigned int d2, unsigned int p0, unsigned int p1, unsigned int p2) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int d[4] = {d0, d1, d2, 1u}, perm[4] = {p0, p1, p2, 3u};
    if (t < d0 * d1 * d2) out[t] = x[permuted_source(t, d, perm)];
}

extern "C" __global__ void permute3_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                        unsigned int d0, unsigned int d1, unsigned int d2, unsigned int p0, unsigned int p1,
                                        unsigned int p2) {
    unsigned int e = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int d[4] = {d0, d1, d2, 1u}, perm[4] = {p0, p1, p2, 3u};
    if (e < d0 * d1 * d2) d_x[e] = d_out[unpermuted_source(e, d, perm)];
}

extern "C" __global__ void permute4_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int d0, unsigned int d1,
                                           unsigned int d2, unsigned int d3, unsigned int p0, unsigned int p1, unsigned int p2,
                                           unsigned int p3) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int d[4] = {d0, d1, d2, d3}, perm[4] = {p0, p1, p2, p3};
    if (t < d0 * d1 * d2 * d3) out[t] = x[permuted_source(t, d, perm)];
}

extern "C" __global__ void permute4_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                        unsigned int d0, unsigned int d1, unsigned int d2, unsigned int d3, unsigned int p0,
                                        unsigned int p1, unsigned int p2, unsigned int p3) {
    unsigned int e = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int d[4] = {d0, d1, d2, d3}, perm[4] = {p0, p1, p2, p3};
    if (e < d0 * d1 * d2 * d3) d_x[e] = d_out[unpermuted_source(e, d, perm)];
}
