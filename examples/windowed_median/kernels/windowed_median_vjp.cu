// VJP of the sliding-window median, as a gather (no float atomics): d_x[j] sums, over the
// windows that contain element j and in window order (the order the reference rule adds them,
// so the sum is bit-exact), the cotangent of every window whose median is element j. A window
// selects the element of rank w / 2 in (total-order key, index) order: the reference's stable
// sort, so of equal values the earlier element is the median.
#include "total_order.cuh"

// `a + b` as the reference's host arithmetic gives it, NaN payloads included: IEEE 754 leaves
// the payload of a NaN result to the implementation; the host's f32 addition (x86-64) returns
// its first NaN operand, quieted, and makes inf + -inf the default NaN 0xffc00000, where the
// GPU returns a canonical NaN (and `exact` compares payloads). NVRTC keeps subnormals (no
// `-ftz`), so the rest is the hardware's addition.
__device__ __forceinline__ float add_as_host(float a, float b) {
    unsigned int ua = __float_as_uint(a), ub = __float_as_uint(b);
    if ((ua & 0x7fffffffu) > 0x7f800000u) return __uint_as_float(ua | 0x00400000u);
    if ((ub & 0x7fffffffu) > 0x7f800000u) return __uint_as_float(ub | 0x00400000u);
    bool ia = (ua & 0x7fffffffu) == 0x7f800000u, ib = (ub & 0x7fffffffu) == 0x7f800000u;
    if (ia && ib && ((ua ^ ub) >> 31)) return __uint_as_float(0xffc00000u);
    return __fadd_rn(a, b);
}

extern "C" __global__ void windowed_median_vjp(const float* __restrict__ x, const float* __restrict__ d_out,
                                               float* __restrict__ d_x, unsigned int n, unsigned int w) {
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    unsigned int kj = total_order_key(x[j]);
    unsigned int first = j + 1u >= w ? j + 1u - w : 0u;
    unsigned int last = min(j, n - w);
    float acc = 0.0f;
    for (unsigned int i = first; i <= last; ++i) {
        unsigned int rank = 0;
        for (unsigned int k = i; k < i + w; ++k) {
            unsigned int kk = total_order_key(x[k]);
            rank += (kk < kj || (kk == kj && k < j)) ? 1u : 0u;
        }
        if (rank == w / 2u) acc = add_as_host(acc, d_out[i]);
    }
    d_x[j] = acc;
}
