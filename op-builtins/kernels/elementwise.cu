// The elementwise built-ins: one thread per element, `i < n` guarded (any block size, any
// grid). Plain IEEE arithmetic (NVRTC's defaults: no fast math, IEEE division, subnormals
// kept), so `add`, `sub`, `mul`, `div`, `scale` and `neg` round exactly as the reference does.

extern "C" __global__ void add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                               unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

extern "C" __global__ void sub(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                               unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] - b[i];
}

extern "C" __global__ void mul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                               unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * b[i];
}

extern "C" __global__ void div_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                               unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] / b[i];
}

// Flips the sign bit: -x for every value, NaN payloads and zeros included.
extern "C" __global__ void neg(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __uint_as_float(__float_as_uint(x[i]) ^ 0x80000000u);
}

extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ out, unsigned int n, float s) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * s;
}

// x where x > 0 or x is NaN (tested on the bits, which no compiler folds away), else +0.
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    unsigned int b = __float_as_uint(v);
    bool positive = (b >> 31) == 0u && b != 0u;
    bool nan = (b & 0x7fffffffu) > 0x7f800000u;
    out[i] = (positive || nan) ? v : 0.0f;
}

// CUDA's libdevice `expf`, `logf` and `tanhf` (at most 2 ulp from the correctly rounded result
// over their whole range, subnormals included, without fast math): inside `ulp(16)`.
extern "C" __global__ void exp_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = expf(x[i]);
}

extern "C" __global__ void log_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = logf(x[i]);
}

extern "C" __global__ void tanh_kernel(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tanhf(x[i]);
}
