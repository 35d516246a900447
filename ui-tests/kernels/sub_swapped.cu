// out[i] = a[i] - b[i], with the inputs declared in the other order.
extern "C" __global__ void sub(const float* b, const float* a, float* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a[i] - b[i];
    }
}
