// VJP of out[i] = x[i] + x[i] at any WGSL element type T: d_x[i] = d_out[i] + d_out[i].
@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read> d_out: array<T>;
@group(0) @binding(2) var<storage, read_write> d_x: array<T>;
struct Dims { n: u32 }
@group(0) @binding(3) var<uniform> dims: Dims;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < dims.n) {
        d_x[gid.x] = d_out[gid.x] + d_out[gid.x];
    }
}
