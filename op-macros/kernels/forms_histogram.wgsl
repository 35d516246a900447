// Histogram of x modulo `bins` (op-macros/src/forms.md): every invocation adds one into its
// bin, atomically. The output is bound `accumulate as counts`: it starts at zero on every
// backend, and this kernel names it `counts`.
struct Params { n: u32, bins: u32 }

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    atomicAdd(&counts[x[i] % p.bins], 1u);
}
