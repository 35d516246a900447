// VJP kernels of the built-ins (the CUDA twins of `conv1d_vjp.wgsl`, `mse_loss_vjp.wgsl` and
// the others; same arithmetic, same order, except where a kernel rounds once from double, as
// the rule does). Products are formed with `__fmul_rn` (never fused).
#include "pairwise.cuh"

#define WG 256u

// VJP of builtin/conv1d: d_x[t] = sum_j d_out[t - j] w[j] over the outputs that exist (in the
// rule's order: outputs ascending), d_w[j] = sum_i d_out[i] x[i + j] over every output.
// Launch: threads = n + 256 m, blocks of 256: the first ceil(n / 256) blocks compute d_x (one
// thread per element), then one block per element of d_w (each thread a contiguous share of the
// outputs, pairwise; the block's partial sums combined as a balanced tree).
extern "C" __global__ void conv1d_vjp(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ d_out, float* __restrict__ d_x,
                                      float* __restrict__ d_w, unsigned int n, unsigned int m) {
    __shared__ float part[WG];
    __shared__ unsigned int wflags[WG];
    unsigned int gxs = (n + WG - 1u) / WG;
    Pairwise acc;
    NonFinite nf;
    if (blockIdx.x < gxs) {
        unsigned int t = blockIdx.x * WG + threadIdx.x;
        if (t >= n) return;
        unsigned int last = n - m;
        unsigned int lo = t > last ? t - last : 0u;
        for (unsigned int j = min(t, m - 1u) + 1u; j > lo; --j) acc.push(nf.fin_prod(d_out[t - (j - 1u)], w[j - 1u]));
        d_x[t] = finish_sum(nf.flags, acc.total());
        return;
    }
    unsigned int j = blockIdx.x - gxs;
    if (j >= m) return;  // uniform across the block
    unsigned int outs = n - m + 1u;
    unsigned int share = (outs + WG - 1u) / WG;
    unsigned int lo = min(threadIdx.x * share, outs);
    unsigned int hi = min(lo + share, outs);
    float prod[16];
    unsigned int i = lo;
    for (; i + 15u < hi; i += 16u) {
        for (unsigned int k = 0; k < 16u; ++k) prod[k] = nf.fin_prod(d_out[i + k], x[i + k + j]);
        acc.push(tree16(prod));
    }
    for (; i < hi; ++i) acc.push(nf.fin_prod(d_out[i], x[i + j]));
    block_tree<WG>(acc.total(), nf.flags, part, wflags);
    if (threadIdx.x == 0) d_w[j] = finish_sum(wflags[0], part[0]);
}

// VJP of builtin/mse_loss: d_a[i] = (a[i] - b[i]) k, d_b[i] = -d_a[i], k = (2 / n) d_out.
extern "C" __global__ void mse_loss_vjp(const float* __restrict__ a, const float* __restrict__ b,
                                        const float* __restrict__ d_out, float* __restrict__ d_a,
                                        float* __restrict__ d_b, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // In double, rounded once (the rule's f64 arithmetic): `a - b` of finite values and
    // `(2 / n) d_out` may overflow in float where the gradient is finite.
    double k = 2.0 * (double)d_out[0] / (double)n;
    float v = (float)(((double)a[i] - (double)b[i]) * k);
    d_a[i] = v;
    d_b[i] = -v;
}

// The elementwise built-ins' VJPs (the rules' arithmetic, one thread per element). Negation
// flips the sign bit (NaN payloads kept, as the host's negation keeps them).
#define ELEMENT unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;

extern "C" __global__ void neg_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int n) {
    ELEMENT d_x[i] = __uint_as_float(__float_as_uint(d_out[i]) ^ 0x80000000u);
}

extern "C" __global__ void relu_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int n) {
    ELEMENT d_x[i] = x[i] > 0.0f ? d_out[i] : 0.0f;
}

extern "C" __global__ void sum_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int n) {
    ELEMENT d_x[i] = d_out[0];
}

extern "C" __global__ void mean_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int n) {
    ELEMENT d_x[i] = __fdiv_rn(d_out[0], (float)n);
}

extern "C" __global__ void scale_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int n, float s) {
    ELEMENT d_x[i] = __fmul_rn(d_out[i], s);
}

extern "C" __global__ void add_vjp(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ d_out,
                                   float* __restrict__ d_a, float* __restrict__ d_b, unsigned int n) {
    ELEMENT d_a[i] = d_out[i];
    d_b[i] = d_out[i];
}

extern "C" __global__ void sub_vjp(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ d_out,
                                   float* __restrict__ d_a, float* __restrict__ d_b, unsigned int n) {
    ELEMENT d_a[i] = d_out[i];
    d_b[i] = __uint_as_float(__float_as_uint(d_out[i]) ^ 0x80000000u);
}

extern "C" __global__ void mul_vjp(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ d_out,
                                   float* __restrict__ d_a, float* __restrict__ d_b, unsigned int n) {
    ELEMENT d_a[i] = __fmul_rn(d_out[i], b[i]);
    d_b[i] = __fmul_rn(d_out[i], a[i]);
}

extern "C" __global__ void div_vjp(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ d_out,
                                   float* __restrict__ d_a, float* __restrict__ d_b, unsigned int n) {
    ELEMENT d_a[i] = __fdiv_rn(d_out[i], b[i]);
    d_b[i] = __fdiv_rn(-__fmul_rn(d_out[i], a[i]), __fmul_rn(b[i], b[i]));
}

// VJP of builtin/matmul: d_a = d_out b^T, d_b = a^T d_out, one thread per gradient element
// (threads = m k + k n: d_a first), each summing its products pairwise, non-finite ones decided
// at the end (the WGSL kernel's arithmetic, in its order).
extern "C" __global__ void matmul_vjp(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ d_out,
                                      float* __restrict__ d_a, float* __restrict__ d_b,
                                      unsigned int m, unsigned int k, unsigned int n) {
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int mk = m * k;
    Pairwise acc;
    NonFinite nf;
    float prod[16];
    if (t < mk) {
        unsigned int i = t / k, q = t % k, j = 0;
        for (; j + 15u < n; j += 16u) {
            for (unsigned int u = 0; u < 16u; ++u) prod[u] = nf.fin_prod(d_out[i * n + j + u], b[q * n + j + u]);
            acc.push(tree16(prod));
        }
        for (; j < n; ++j) acc.push(nf.fin_prod(d_out[i * n + j], b[q * n + j]));
        d_a[t] = finish_sum(nf.flags, acc.total());
    } else if (t < mk + k * n) {
        unsigned int u = t - mk, q = u / n, j = u % n, i = 0;
        for (; i + 15u < m; i += 16u) {
            for (unsigned int v = 0; v < 16u; ++v) prod[v] = nf.fin_prod(a[(i + v) * k + q], d_out[(i + v) * n + j]);
            acc.push(tree16(prod));
        }
        for (; i < m; ++i) acc.push(nf.fin_prod(a[i * k + q], d_out[i * n + j]));
        d_b[u] = finish_sum(nf.flags, acc.total());
    }
}

// exp: d_x = e^x g, in double and rounded once (as the rule: e^x alone overflows or goes
// subnormal in float where the product is an ordinary number). For a finite x, e^x is positive
// and finite even where double's exp is infinite (x > 709.78) or zero (x < -745.13): a zero or
// infinite g is then the product (inf * 0 and 0 * inf would make a NaN).
extern "C" __global__ void exp_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int n) {
    ELEMENT {
        float v = x[i], g = d_out[i];
        d_x[i] = (isfinite(v) && (g == 0.0f || isinf(g))) ? g : (float)(exp((double)v) * (double)g);
    }
}

// log: d_x = g / x (correctly rounded, as the rule's division).
extern "C" __global__ void log_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int n) {
    ELEMENT d_x[i] = __fdiv_rn(d_out[i], x[i]);
}

// tanh: d_x = (g sech x) sech x, sech x = 2h / (1 + h h) with h = e^-|x|, in the rule's order
// (see builtin::tanh_vjp: no cancellation near saturation, no subnormal before the result).
extern "C" __global__ void tanh_vjp(const float* __restrict__ x, const float* __restrict__ d_out, float* __restrict__ d_x, unsigned int n) {
    ELEMENT {
        float h = expf(-fabsf(x[i]));
        float q = __fdiv_rn(__fmul_rn(2.0f, h), __fadd_rn(1.0f, __fmul_rn(h, h)));
        d_x[i] = __fmul_rn(__fmul_rn(d_out[i], q), q);
    }
}
