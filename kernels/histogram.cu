// Histogram of x modulo `bins`: every thread adds one into its bin (atomically). The output is
// declared `accumulate`, so it starts at zero; bins no element falls into are never touched.
extern "C" __global__ void histogram(const unsigned int* __restrict__ x, unsigned int* out, unsigned int n,
                                     unsigned int bins) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&out[x[i] % bins], 1u);
}
