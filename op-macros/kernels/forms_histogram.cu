// Histogram of x modulo `bins` (op-macros/src/forms.md), two ways; the op picks one with
// `entry = "..."`. The output is bound `accumulate as counts`: it starts at zero, and these
// kernels name it `counts`.

// One atomic add into global memory per element.
extern "C" __global__ void histogram_global(const unsigned int* __restrict__ x, unsigned int* counts, unsigned int n,
                                            unsigned int bins) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&counts[x[i] % bins], 1u);
}

// Counts per block in shared memory (the op's `bins <= 4096` is what fits), then one atomic add
// per non-empty bin into global memory.
extern "C" __global__ void histogram_shared(const unsigned int* __restrict__ x, unsigned int* counts, unsigned int n,
                                            unsigned int bins) {
    __shared__ unsigned int local[4096];
    for (unsigned int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0u;
    __syncthreads();
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&local[x[i] % bins], 1u);
    __syncthreads();
    for (unsigned int b = threadIdx.x; b < bins; b += blockDim.x) {
        if (local[b] != 0u) atomicAdd(&counts[b], local[b]);
    }
}
