// Deliberately broken test/grid/transpose (a negative control): the guard compares the
// column with m and the row with n (swapped extents). On a non-square x it skips elements
// (or, were it not for bounds checks, reads past a row), so conformance must reject it.
struct Params { m: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    if (j >= p.m || i >= p.n) { return; }
    out[j * p.m + i] = x[i * p.n + j];
}
