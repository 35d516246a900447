// abs, sqrt, square, sigmoid, maximum and minimum on half precision: `T` is `__half` or
// `__nv_bfloat16` (the engine's prelude includes cuda_fp16.h / cuda_bf16.h and typedefs it). One
// thread per element, `i < n` guarded. abs clears the sign bit and maximum/minimum store the
// chosen operand itself, so all three are bit-exact, NaN payloads included. sqrt, square and
// sigmoid widen to float (exact) and round once to `T`: the float product of two half values is
// exact (square is the correctly rounded product), and IEEE sqrtf rounded to `T` is the correctly
// rounded root (float's 24 bits >= 2p + 2 for both formats).

__device__ __forceinline__ unsigned short lib_bits_of(T v) { return *reinterpret_cast<unsigned short*>(&v); }
__device__ __forceinline__ T lib_of_bits(unsigned short b) { return *reinterpret_cast<T*>(&b); }

#include "takes_first.cuh"

extern "C" __global__ void abs_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = lib_of_bits(lib_bits_of(x[i]) & 0x7fffu);
}

extern "C" __global__ void sqrt_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(sqrtf(float(x[i])));
}

extern "C" __global__ void square_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = float(x[i]);
    out[i] = T(v * v);
}

// 1 / (1 + e^-x), e^-x rounded to `T` as the reference (which computes in `T`) rounds it: where
// it overflows `T` the result is 0, as the reference's, the rest in float and rounded once.
extern "C" __global__ void sigmoid_half(const T* __restrict__ x, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float e = float(T(expf(-float(x[i]))));
    out[i] = T(1.0f / (1.0f + e));
}

extern "C" __global__ void maximum_half(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = takes_first(float(a[i]), float(b[i]), true) ? a[i] : b[i];
}

extern "C" __global__ void minimum_half(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = takes_first(float(a[i]), float(b[i]), false) ? a[i] : b[i];
}
