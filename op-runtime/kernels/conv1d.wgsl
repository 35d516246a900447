// builtin/conv1d: out[i] = sum_j x[i + j] w[j] (valid correlation); one invocation per output.
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n - p.m + 1u) { return; }
    var s = 0.0;
    for (var j = 0u; j < p.m; j = j + 1u) {
        s = s + x[i + j] * w[j];
    }
    out[i] = s;
}
