// A 2-D launch (op-macros/src/forms.md): out[j, i] = x[i, j] for x of m rows and n columns,
// over `threads = (n, m)` in 16 x 16 blocks: x is the column j, y the row i.
extern "C" __global__ void transpose(const float* __restrict__ x, float* __restrict__ out, unsigned int m, unsigned int n) {
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (j >= n || i >= m) return;
    out[(size_t)j * m + i] = x[(size_t)i * n + j];
}
