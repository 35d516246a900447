// out = 3x + x/2 at the element type `T` the engine binds (`alias T = f32;` is prepended).
@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read_write> out: array<T>;
struct Dims { n: u32 }
@group(0) @binding(2) var<uniform> dims: Dims;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < dims.n) {
        out[i] = x[i] * T(3.0) + x[i] * T(0.5);
    }
}
