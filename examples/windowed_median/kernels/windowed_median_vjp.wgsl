// VJP of the sliding-window median, as a gather (no float atomics): d_x[j] sums, over the
// windows that contain element j and in window order (the order the reference rule adds them,
// so the sum is bit-exact), the cotangent of every window whose median is element j. A window
// selects the element of rank w / 2 in (total-order key, index) order: the reference's stable
// sort, so of equal values the earlier element is the median. The additions are `add_exact`'s.
struct Params { n: u32, w: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}

// `a + b` exactly as the reference's host arithmetic gives it (x86-64: IEEE 754 with gradual
// underflow; a NaN operand comes back quieted, the first one if both are; inf + -inf is the
// default NaN 0xffc00000), also on devices that flush subnormals to zero or canonicalise NaNs
// (NVIDIA's Vulkan driver does both; `exact` compares every bit): NaNs and infinities are
// decided on the bits, and a sum whose operands are both below 2^-100 (the only sums whose
// result can be subnormal) is formed scaled by 2^64, where every value involved is normal and
// rounds the same. A subnormal beside an operand of 2^-100 or more cannot change the rounded
// sum, so flushing it there changes nothing.
fn pow2(e: i32) -> f32 {
    return bitcast<f32>(u32(127 + e) << 23u);
}

// v * 2^64, exactly, for |v| < 2^-100 given by its bits (a subnormal is its integer mantissa
// times 2^-149).
fn scale_up(u: u32) -> f32 {
    let mag = u & 0x7fffffffu;
    var s = bitcast<f32>(mag) * pow2(64);
    if (mag < 0x00800000u) { s = f32(mag) * pow2(-85); }
    return select(s, -s, (u >> 31u) == 1u);
}

// s * 2^-64, exactly: a subnormal result built from its integer mantissa.
fn scale_down(s: f32) -> f32 {
    let u = bitcast<u32>(s);
    if ((u & 0x7fffffffu) >= (65u << 23u)) { return s * pow2(-64); } // |s| >= 2^-62: normal
    return bitcast<f32>((u & 0x80000000u) | u32(abs(s) * pow2(85)));
}

fn add_exact(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    if ((ua & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>(ua | 0x00400000u); }
    if ((ub & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>(ub | 0x00400000u); }
    let ia = (ua & 0x7fffffffu) == 0x7f800000u;
    let ib = (ub & 0x7fffffffu) == 0x7f800000u;
    if (ia && ib && ((ua ^ ub) >> 31u) == 1u) { return bitcast<f32>(0xffc00000u); }
    let small = 27u << 23u; // 2^-100
    if (ia || ib || (ua & 0x7fffffffu) >= small || (ub & 0x7fffffffu) >= small) { return a + b; }
    return scale_down(scale_up(ua) + scale_up(ub));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let j = gid.x + gid.y * nwg.x * 64u;
    if (j >= p.n) { return; }
    let kj = key(x[j]);
    let first = select(0u, j + 1u - p.w, j + 1u >= p.w);
    let last = min(j, p.n - p.w);
    var acc: f32 = 0.0;
    for (var i = first; i <= last; i = i + 1u) {
        var rank = 0u;
        for (var k = i; k < i + p.w; k = k + 1u) {
            let kk = key(x[k]);
            if (kk < kj || (kk == kj && k < j)) { rank = rank + 1u; }
        }
        if (rank == p.w / 2u) { acc = add_exact(acc, d_out[i]); }
    }
    d_x[j] = acc;
}
