// The elementwise built-ins on half precision: `T` is `__half` or `__nv_bfloat16` (the engine's
// prelude includes cuda_fp16.h / cuda_bf16.h and typedefs it). One thread per element, `i < n`
// guarded. add, sub, mul and div widen to float (exact), compute there and round once to `T`
// (round to nearest even): for +, - and * that is the correctly rounded result, as the
// reference's (half's arithmetic widens to f32 too; float holds more than 2p + 2 bits for both
// formats), and float's IEEE division rounds to within one ulp of `T`. neg flips the sign bit
// and relu selects the input itself, so both are bit-exact, NaN payloads included. exp, log and
// tanh run libdevice's float functions (at most 2 float ulp) and round once.

__device__ __forceinline__ unsigned short bits_of(T v) { return *reinterpret_cast<unsigned short*>(&v); }
__device__ __forceinline__ T of_bits(unsigned short b) { return *reinterpret_cast<T*>(&b); }

extern "C" __global__ void add_half(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(float(a[i]) + float(b[i]));
}

extern "C" __global__ void sub_half(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(float(a[i]) - float(b[i]));
}

extern "C" __global__ void mul_half(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(float(a[i]) * float(b[i]));
}

extern "C" __global__ void div_half(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(float(a[i]) / float(b[i]));
}

extern "C" __global__ void neg_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = of_bits(bits_of(x[i]) ^ 0x8000u);
}

// x where x > 0 or x is NaN, else +0; decided on the bits of its (exact) float widening.
extern "C" __global__ void relu_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T v = x[i];
    unsigned int b = __float_as_uint(float(v));
    bool positive = (b >> 31) == 0u && b != 0u;
    bool nan = (b & 0x7fffffffu) > 0x7f800000u;
    out[i] = (positive || nan) ? v : of_bits(0u);
}

extern "C" __global__ void exp_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(expf(float(x[i])));
}

extern "C" __global__ void log_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(logf(float(x[i])));
}

extern "C" __global__ void tanh_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(tanhf(float(x[i])));
}
