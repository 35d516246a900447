// A 3-D launch (op-macros/src/forms.md): out[k, j, i] = x[k, i, j] for b matrices of m rows
// and n columns, over `threads = (n, m, b)`: x is the column j, y the row i, z the matrix k.
// `T` is the element type of the instance served (the engine prepends `typedef float T;` or
// `typedef double T;`).
extern "C" __global__ void batch_transpose(const T* __restrict__ x, T* __restrict__ out, unsigned int b, unsigned int m,
                                           unsigned int n) {
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int i = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (j >= n || i >= m || k >= b) return;
    size_t base = (size_t)k * m * n;
    out[base + (size_t)j * m + i] = x[base + (size_t)i * n + j];
}
