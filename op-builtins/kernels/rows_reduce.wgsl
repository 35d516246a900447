// builtin/sum_rows (entry `sum_rows`) and builtin/mean_rows (`mean_rows`): one invocation per
// row (rows in parallel, linear launch in rows of nwg.x workgroups of 64), summing the row
// pairwise: units of 8 consecutive terms as a balanced tree, pushed on a binary counter, so
// every term is rounded at most about ceil(log2 c) + 3 times, within `accum`'s pairwise bound.
// The terms are scaled by 2^-k, 2^k >= c, so no partial sum overflows where the exact sum does
// not (a pairwise sum's order differs from the reference's); the result is scaled back (exact;
// an overflow there is the exact sum's). The scaling is done on the exponent bits: a
// multiplication by 2^-k could be factored out of the sum by the shader compiler (Mesa does),
// which would overflow again. Non-finite terms are kept out of the sum and decide
// the result (`lib/nonfinite_flags.wgsl`). Loop iterations per invocation: c / 8 + 8, below
// lavapipe's limit of 65535 for rows of up to 500k elements.
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/pairwise.wgsl"
// @include "lib/nonfinite_flags.wgsl"

// 2^e (|e| <= 126).
fn pow2(e: i32) -> f32 {
    return bitcast<f32>(u32(127 + e) << 23u);
}

// k with 2^k >= c (0 for c <= 1).
fn scale_exp(c: u32) -> i32 {
    return i32(32u - countLeadingZeros(max(c, 1u) - 1u));
}

// v 2^-k for a finite v: exact on the exponent bits where the result stays normal; the rest
// (below 2^(k - 126) in magnitude) multiplied, landing in the subnormals or at 0 (an error of
// at most 2^-149 per term, which `accum`'s `len * min_normal` term covers).
fn scaled(v: f32, k: i32) -> f32 {
    let u = bitcast<u32>(v);
    if (i32((u >> 23u) & 0xffu) > k) { return bitcast<f32>(u - (u32(k) << 23u)); }
    return v * pow2(-k);
}

// The sum of row `row`, its terms scaled by 2^-k, finished.
fn row_total(row: u32, k: i32) -> f32 {
    let base = row * p.c;
    var i = 0u;
    for (; i + 7u < p.c; i = i + 8u) {
        let a = (scaled(fin(x[base + i]), k) + scaled(fin(x[base + i + 1u]), k)) + (scaled(fin(x[base + i + 2u]), k) + scaled(fin(x[base + i + 3u]), k));
        let b = (scaled(fin(x[base + i + 4u]), k) + scaled(fin(x[base + i + 5u]), k)) + (scaled(fin(x[base + i + 6u]), k) + scaled(fin(x[base + i + 7u]), k));
        push(a + b);
    }
    for (; i < p.c; i = i + 1u) {
        push(scaled(fin(x[base + i]), k));
    }
    return finish(flags, pushed());
}

@compute @workgroup_size(64)
fn sum_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= p.r) { return; }
    let k = scale_exp(p.c);
    out[row] = row_total(row, k) * pow2(k);
}

@compute @workgroup_size(64)
fn mean_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= p.r) { return; }
    let k = scale_exp(p.c);
    out[row] = (row_total(row, k) / f32(p.c)) * pow2(k);
}
