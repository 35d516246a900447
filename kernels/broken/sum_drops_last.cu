// DELIBERATELY BROKEN (conformance must reject it): the strided loop stops at n - 1, so the
// last element is never added. One block of 256 threads, a tree reduction in shared memory.
extern "C" __global__ void sum_drops_last(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    __shared__ float part[256];
    float s = 0.0f;
    for (unsigned int i = threadIdx.x; i + 1u < n; i += 256u) s += x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (unsigned int stride = 128u; stride > 0u; stride /= 2u) {
        if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0u) out[0] = part[0];
}
