// out[i] = x[i] + x[i], taking the dim as a signed int.
extern "C" __global__ void double_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] + x[i];
    }
}
