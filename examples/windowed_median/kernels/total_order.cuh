// IEEE-754 total order for f32 as unsigned keys (negative values reversed below positives).
#pragma once

__device__ __forceinline__ unsigned int total_order_key(float v) {
    unsigned int b = __float_as_uint(v);
    return (b >> 31) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float from_total_order_key(unsigned int k) {
    return __uint_as_float((k >> 31) ? (k & 0x7fffffffu) : ~k);
}
