// Sliding-window median: out[i] = median(x[i .. i + w]), w odd and at most 31.
// Values are ordered by IEEE total order (-0 < +0), exactly as the reference's `total_cmp`:
// each float maps to an unsigned key whose integer order is that total order, and equal keys
// are equal bits, so any of several equal elements is the reference's median.
//
// Each thread computes RUN consecutive outputs (the contract launches ceil((n - w + 1) / RUN)
// threads): it sorts its first window once (insertion), then slides it one element at a time,
// the leaving key's slot moving to where the entering key belongs (one removal and one
// insertion per output, O(w) instead of a sort per window).
#include "total_order.cuh"

#define RUN 16u

extern "C" __global__ void windowed_median(const float* __restrict__ x, float* __restrict__ out,
                                           unsigned int n, unsigned int w) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int outputs = n - w + 1u;
    if (t >= (outputs + RUN - 1u) / RUN) return;
    unsigned int first = t * RUN;
    unsigned int end = min(first + RUN, outputs);
    unsigned int win[31];
    for (unsigned int j = 0; j < w; ++j) {
        unsigned int k = total_order_key(x[first + j]);
        unsigned int p = j;
        while (p > 0 && win[p - 1] > k) {
            win[p] = win[p - 1];
            --p;
        }
        win[p] = k;
    }
    out[first] = from_total_order_key(win[w / 2]);
    for (unsigned int i = first + 1u; i < end; ++i) {
        unsigned int leaving = total_order_key(x[i - 1u]);
        unsigned int entering = total_order_key(x[i + w - 1u]);
        unsigned int p = 0;
        while (win[p] != leaving) ++p;
        if (entering > leaving) {
            while (p + 1u < w && win[p + 1u] < entering) {
                win[p] = win[p + 1u];
                ++p;
            }
        } else {
            while (p > 0 && win[p - 1u] > entering) {
                win[p] = win[p - 1u];
                --p;
            }
        }
        win[p] = entering;
        out[i] = from_total_order_key(win[w / 2]);
    }
}
