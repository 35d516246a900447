// out[i] = x[i] + x[i], with the input read as doubles.
extern "C" __global__ void double_kernel(const double* x, float* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = (float)(x[i] + x[i]);
    }
}
