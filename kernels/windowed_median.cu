// Sliding-window median: out[i] = median(x[i .. i + w]), w odd and at most 31.
// Values are ordered by IEEE total order (-0 < +0), exactly as the reference's `total_cmp`:
// each float maps to an unsigned key whose integer order is that total order.
#include "total_order.cuh"

extern "C" __global__ void windowed_median(const float* __restrict__ x, float* __restrict__ out,
                                           unsigned int n, unsigned int w) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n - w + 1u) return;
    unsigned int win[31];
    for (unsigned int j = 0; j < w; ++j) {
        unsigned int k = total_order_key(x[i + j]);
        unsigned int p = j;
        while (p > 0 && win[p - 1] > k) {
            win[p] = win[p - 1];
            --p;
        }
        win[p] = k;
    }
    out[i] = from_total_order_key(win[w / 2]);
}
