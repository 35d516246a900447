// DELIBERATELY BROKEN (conformance must reject it): one thread adds every element, last to
// first. Each term is then rounded up to n - 1 times, and on a long biased input (0.1 repeated)
// the error grows past `accum(2)`'s pairwise bound, k * ceil(log2 n) * eps * sum |x|. (Summed
// first to last, it would be the reference's own f32 arithmetic, whose bits `accum` accepts.)
extern "C" __global__ void sum_sequential(const float* __restrict__ x, float* __restrict__ out, unsigned int n) {
    if (blockIdx.x * blockDim.x + threadIdx.x != 0u) return;
    float s = 0.0f;
    for (unsigned int i = n; i > 0u; --i) s += x[i - 1u];
    out[0] = s;
}
