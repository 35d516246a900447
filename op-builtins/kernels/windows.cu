// builtin/unfold and its VJP (the CUDA twins of `unfold.wgsl` and `unfold_vjp.wgsl`). One
// thread per element, flat grid. Plain IEEE addition (NVRTC's defaults: subnormals kept), in
// the rule's order, so the VJP's sums are the rule's bits.

// out[k] = x[i s + j] for k = i w + j, over the (n - w) / s + 1 windows.
extern "C" __global__ void unfold(const float* __restrict__ x, float* __restrict__ out, unsigned int n, unsigned int w,
                                  unsigned int s) {
    unsigned int k = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int rows = (n - w) / s + 1u;
    if (k >= rows * w) return;
    unsigned int i = k / w;
    out[k] = x[i * s + (k - i * w)];
}

// d_x[q] = sum over the windows i containing q, ascending, of d_out[i w + q - i s].
extern "C" __global__ void unfold_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                      unsigned int n, unsigned int w, unsigned int s) {
    unsigned int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n) return;
    unsigned int rows = (n - w) / s + 1u;
    unsigned int first = q + 1u > w ? (q + 1u - w + s - 1u) / s : 0u;
    unsigned int last = min(q / s, rows - 1u);
    float acc = 0.0f;
    for (unsigned int i = first; i <= last; ++i) acc = __fadd_rn(acc, d_out[i * w + q - i * s]);
    d_x[q] = acc;
}
