// Like double.cu, but the input pointer is not `const`.
#include "common.cuh"

extern "C" __global__ void double_kernel(float* x, float* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = twice(x[i]);
    }
}
