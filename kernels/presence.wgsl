// Which bins of x modulo `bins` are hit: every invocation stores 1 into its bin (all stores to
// one bin store the same value). Bins nothing falls into are never written: correct only when
// the output starts at zero, i.e. when it is declared `accumulate`.
struct Params { n: u32, bins: u32 }

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[x[i] % p.bins] = 1u;
}
