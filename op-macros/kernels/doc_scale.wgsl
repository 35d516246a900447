// The kernel of the `#[op]` doc example (`op-macros/src/lib.rs`): out[i] = x[i] * s. A doctest
// resolves kernel paths against the crate under test, so the example's kernel lives here.
struct Params { n: u32, s: f32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[i] = x[i] * p.s;
}
