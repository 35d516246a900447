// Sliding-window median: out[i] = median(x[i .. i + w]), w odd and at most 31.
// Values are ordered by IEEE total order (-0 < +0), exactly as the reference's `total_cmp`:
// each float maps to an unsigned key whose integer order is that total order, and equal keys
// are equal bits, so any of several equal elements is the reference's median.
//
// Each thread stands for RUN (17) consecutive outputs (the contract launches ceil((n - w + 1) / RUN)
// threads, in blocks of BLOCK; any block size works). The block first loads the keys of its
// inputs into shared memory (coalesced); each thread then sorts its first window in registers
// (an odd-even transposition network, w rounds) and slides it over RUN outputs: the leaving
// key is removed (everything above it moves down one) and the entering one inserted (everything
// above it moves up one), both as branch-free selects on the register array, O(w) per output
// instead of a sort per window. The window length is a template parameter (one instance per
// odd w, chosen by a switch), so the window lives in registers. Outputs are staged in shared
// memory and stored coalesced.
#include "total_order.cuh"

#define RUN 17u  // odd: thread t's keys start at word 17t, so a warp's shared-memory reads hit 32 banks
#define BLOCK 128u

template <unsigned int W>
__device__ __forceinline__ void median_run(const unsigned int* keys, float* res, unsigned int count) {
    unsigned int s[W];
#pragma unroll
    for (unsigned int j = 0; j < W; ++j) s[j] = keys[j];
#pragma unroll
    for (unsigned int round = 0; round < W; ++round) {
#pragma unroll
        for (unsigned int j = round & 1u; j + 1u < W; j += 2u) {
            unsigned int lo = min(s[j], s[j + 1u]);
            unsigned int hi = max(s[j], s[j + 1u]);
            s[j] = lo;
            s[j + 1u] = hi;
        }
    }
    res[0] = from_total_order_key(s[W / 2u]);
    for (unsigned int i = 1; i < count; ++i) {
        unsigned int leaving = keys[i - 1u];
        unsigned int entering = keys[i + W - 1u];
        unsigned int p = 0;  // the leaving key's first slot: how many keys are below it
#pragma unroll
        for (unsigned int j = 0; j < W; ++j) p += s[j] < leaving ? 1u : 0u;
        unsigned int t[W - 1u];  // the window without it
#pragma unroll
        for (unsigned int j = 0; j + 1u < W; ++j) t[j] = j < p ? s[j] : s[j + 1u];
        unsigned int q = 0;  // the entering key's slot
#pragma unroll
        for (unsigned int j = 0; j + 1u < W; ++j) q += t[j] < entering ? 1u : 0u;
        s[0] = q == 0u ? entering : t[0];
#pragma unroll
        for (unsigned int j = 1; j < W; ++j) s[j] = j < q ? t[j] : (j == q ? entering : t[j - 1u]);
        res[i] = from_total_order_key(s[W / 2u]);
    }
}

// RUN outputs (`count` of them) from `keys`, one window length per instance.
__device__ void slide(const unsigned int* k, float* r, unsigned int count, unsigned int w) {
    switch (w) {
        case 1: for (unsigned int i = 0; i < count; ++i) r[i] = from_total_order_key(k[i]); break;
        case 3: median_run<3>(k, r, count); break;
        case 5: median_run<5>(k, r, count); break;
        case 7: median_run<7>(k, r, count); break;
        case 9: median_run<9>(k, r, count); break;
        case 11: median_run<11>(k, r, count); break;
        case 13: median_run<13>(k, r, count); break;
        case 15: median_run<15>(k, r, count); break;
        case 17: median_run<17>(k, r, count); break;
        case 19: median_run<19>(k, r, count); break;
        case 21: median_run<21>(k, r, count); break;
        case 23: median_run<23>(k, r, count); break;
        case 25: median_run<25>(k, r, count); break;
        case 27: median_run<27>(k, r, count); break;
        case 29: median_run<29>(k, r, count); break;
        case 31: median_run<31>(k, r, count); break;
        default: break;  // the contract admits odd w <= 31 only
    }
}

extern "C" __global__ void windowed_median(const float* __restrict__ x, float* __restrict__ out,
                                           unsigned int n, unsigned int w) {
    __shared__ unsigned int keys[BLOCK * RUN + 30u];
    __shared__ float res[BLOCK * RUN];
    unsigned int outputs = n - w + 1u;
    // This block's outputs: blockDim.x * RUN from block_first, in chunks that BLOCK threads (or
    // fewer, in a smaller block) compute RUN at a time: any block size computes every output.
    unsigned int lanes = min(blockDim.x, BLOCK);
    unsigned int block_first = blockIdx.x * blockDim.x * RUN;
    for (unsigned int chunk = 0; chunk < blockDim.x * RUN; chunk += lanes * RUN) {
        unsigned int chunk_first = block_first + chunk;
        if (chunk_first >= outputs) return;  // uniform across the block
        unsigned int chunk_outputs = min(lanes * RUN, outputs - chunk_first);
        for (unsigned int k = threadIdx.x; k < chunk_outputs + w - 1u; k += blockDim.x) {
            keys[k] = total_order_key(x[chunk_first + k]);
        }
        __syncthreads();
        unsigned int first = threadIdx.x * RUN;
        if (threadIdx.x < lanes && first < chunk_outputs) {
            slide(keys + first, res + first, min(RUN, chunk_outputs - first), w);
        }
        __syncthreads();
        for (unsigned int k = threadIdx.x; k < chunk_outputs; k += blockDim.x) out[chunk_first + k] = res[k];
        __syncthreads();
    }
}
