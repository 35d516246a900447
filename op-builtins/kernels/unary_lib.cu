// builtin/abs, sqrt, square, sigmoid and their VJPs (the CUDA twins of `unary_lib.wgsl` and
// `unary_lib_vjp.wgsl`; same arithmetic, same order). One thread per element, flat grid.
// NVRTC's defaults: IEEE square root and division, subnormals kept; `expf` (not `__expf`).

extern "C" __global__ void abs_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __uint_as_float(__float_as_uint(x[i]) & 0x7fffffffu);
}

extern "C" __global__ void sqrt_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = sqrtf(x[i]);
}

extern "C" __global__ void square_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __fmul_rn(x[i], x[i]);
}

extern "C" __global__ void sigmoid_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 1.0f / (1.0f + expf(-x[i]));
}

// abs: g where x > 0, -g where x < 0, else 0 (zeros and NaN), on the bits.
extern "C" __global__ void abs_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                   unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int u = __float_as_uint(x[i]);
    unsigned int mag = u & 0x7fffffffu;
    float g = d_out[i];
    d_x[i] = (mag != 0u && mag <= 0x7f800000u) ? ((u >> 31) ? -g : g) : 0.0f;
}

extern "C" __global__ void sqrt_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                    unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d_x[i] = d_out[i] / __fmul_rn(2.0f, sqrtf(x[i]));
}

extern "C" __global__ void square_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                      unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d_x[i] = __fmul_rn(x[i] + x[i], d_out[i]);
}

extern "C" __global__ void sigmoid_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x,
                                       unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = fabsf(x[i]);
    if (a > 64.0f) {  // no subnormal h scaled up by g (see the rule)
        d_x[i] = __fmul_rn(__fmul_rn(d_out[i], expf(-(a - 44.0f))), __uint_as_float(0x1fb7ba0fu));
        return;
    }
    float h = expf(-a);
    float d = 1.0f + h;
    d_x[i] = __fmul_rn(d_out[i], h / __fmul_rn(d, d));
}
