// Shared by builtin/maximum's and builtin/minimum's CUDA kernels (f32 in `binary_lib.cu`, the
// half types in `half_lib.cu`, which widen exactly to float first): IEEE total order on the
// bits, NaN winning (a's first).

__device__ __forceinline__ unsigned int total_order_key(float v) {
    unsigned int b = __float_as_uint(v);
    return (b >> 31) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ bool is_nan_bits(float v) { return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u; }

// Whether the selection takes `x` over `y`: x is NaN, or y is not and x is on the wanted side of
// y in total order (or equal: then the bits are equal).
__device__ __forceinline__ bool takes_first(float x, float y, bool larger) {
    if (is_nan_bits(x)) return true;
    if (is_nan_bits(y)) return false;
    unsigned int kx = total_order_key(x), ky = total_order_key(y);
    return larger ? kx >= ky : kx <= ky;
}
