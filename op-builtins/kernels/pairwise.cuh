// Pairwise summation and non-finite bookkeeping shared by the built-ins' CUDA reductions and
// contractions (the CUDA twins of the WGSL kernels' `push` / `pushed` / `fin` / `finish`).
//
// `Pairwise` is the binary counter `accum` bounds (see the README's "Tolerance classes"):
// `lvl[l]` holds the sum of 2^l consecutive units while bit l of `units` is set; pushing a
// unit first merges the occupied low levels into it, oldest on the left, so every term is
// rounded at most ceil(log2 units) times after its unit's own tree.
//
// `NonFinite` keeps non-finite terms out of the sum: `fin` records them and returns 0, and
// `finish` gives the exact-arithmetic result: NaN if a term is NaN or both infinities occur,
// else the infinity that occurs, else the pairwise sum of the finite terms. (Summed in with the
// finite ones, an infinity could meet the opposite infinity from a partial sum of finite terms
// that overflowed in this order but not in the reference's.)
//
// Products are formed with `__fmul_rn`, which the compiler never contracts into a fused
// multiply-add: a fused product is never rounded, so it could not be seen to overflow.
#pragma once

struct Pairwise {
    float lvl[32];
    unsigned int units;

    __device__ Pairwise() : units(0u) {}

    __device__ void push(float u) {
        unsigned int free_bits = ~units;
        unsigned int c = free_bits ? (unsigned int)(__ffs(free_bits) - 1) : 31u;
        float v = u;
        for (unsigned int l = 0; l < c; ++l) v = lvl[l] + v;
        lvl[c] = v;
        units += 1u;
    }

    // The sum of every pushed unit (0 when none): the occupied levels, newest (lowest) first.
    __device__ float total() const {
        float s = 0.0f;
        bool seen = false;
        for (unsigned int l = 0; l < 32u; ++l) {
            if ((units >> l) & 1u) {
                s = seen ? lvl[l] + s : lvl[l];
                seen = true;
            }
        }
        return s;
    }
};

// Flags: 1 NaN, 2 +inf, 4 -inf, 8 / 16 a positive / negative overflowed product of finite
// factors (OR-ed across threads by the block reductions).
struct NonFinite {
    unsigned int flags;

    __device__ NonFinite() : flags(0u) {}

    __device__ float fin(float v) {
        unsigned int bits = __float_as_uint(v);
        if ((bits & 0x7f800000u) != 0x7f800000u) return v;
        if (bits & 0x007fffffu) {
            flags |= 1u;
        } else if (bits >> 31) {
            flags |= 4u;
        } else {
            flags |= 2u;
        }
        return 0.0f;
    }

    // A product: as `fin`, except that a product of two finite factors that overflows (a finite
    // exact term) is recorded apart (8: positive, 16: negative), so that it never meets an
    // infinite input term as an infinity of its own.
    __device__ float fin_prod(float u, float v) {
        float q = __fmul_rn(u, v);
        if (isfinite(q) || !isfinite(u) || !isfinite(v)) return fin(q);
        flags |= (__float_as_uint(q) >> 31) ? 16u : 8u;
        return 0.0f;
    }
};

// The exact-arithmetic result: NaN for a NaN term or both infinities, else the infinity that
// occurs; else, from overflowed products of finite factors only, NaN for both signs or the
// overflow's sign; else the finite sum.
__device__ __forceinline__ float finish_sum(unsigned int flags, float s) {
    if ((flags & 1u) || (flags & 6u) == 6u) return __uint_as_float(0x7fc00000u);
    if (flags & 2u) return __uint_as_float(0x7f800000u);
    if (flags & 4u) return __uint_as_float(0xff800000u);
    if ((flags & 24u) == 24u) return __uint_as_float(0x7fc00000u);
    if (flags & 8u) return __uint_as_float(0x7f800000u);
    if (flags & 16u) return __uint_as_float(0xff800000u);
    return s;
}

// A balanced tree over 8 and 16 consecutive terms, left to right (the units the kernels push).
__device__ __forceinline__ float tree8(const float* p) {
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

__device__ __forceinline__ float tree16(const float* p) {
    return tree8(p) + tree8(p + 8);
}

// The sum of one value per thread of a block of `WG` threads (a power of two), and the OR of
// their flags, as a tree in shared memory: left in `part[0]` and `wflags[0]` (not finished:
// flags and the finite sum stay apart). Every thread must call it (it synchronises).
template <unsigned int WG>
__device__ void block_tree(float mine, unsigned int my_flags, float* part, unsigned int* wflags) {
    unsigned int lid = threadIdx.x;
    part[lid] = mine;
    wflags[lid] = my_flags;
    __syncthreads();
    for (unsigned int stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (lid < stride) {
            part[lid] = part[lid] + part[lid + stride];
            wflags[lid] = wflags[lid] | wflags[lid + stride];
        }
        __syncthreads();
    }
}
