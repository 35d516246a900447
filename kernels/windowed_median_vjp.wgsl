// VJP of the sliding-window median, as a gather (no float atomics): d_x[j] sums, over the
// windows that contain element j and in window order (the order the reference rule adds them,
// so the sum is bit-exact), the cotangent of every window whose median is element j. A window
// selects the element of rank w / 2 in (total-order key, index) order: the reference's stable
// sort, so of equal values the earlier element is the median.
struct Params { n: u32, w: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
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
        if (rank == p.w / 2u) { acc = acc + d_out[i]; }
    }
    d_x[j] = acc;
}
