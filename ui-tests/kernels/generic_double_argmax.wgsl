@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read_write> y: array<T>;
@group(0) @binding(2) var<storage, read_write> at: array<u32>;
struct Dims { n: u32 }
@group(0) @binding(3) var<uniform> dims: Dims;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < dims.n) {
        y[i] = x[i];
    }
    if (i == 0u) {
        var best = 0u;
        for (var j = 1u; j < dims.n; j = j + 1u) {
            if (x[j] > x[best]) { best = j; }
        }
        at[0] = best;
    }
}
