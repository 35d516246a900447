// builtin/mse_loss: out[0] = sum((a - b)^2) / n. One workgroup of 256 invocations: each accumulates a strided
// partial sum, then a tree reduction in workgroup memory. The order differs from the
// reference's left-to-right loop; `accum` bounds exactly that difference.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var i = lid; i < p.n; i = i + WG) {
        let d = a[i] - b[i];
        s = s + d * d;
    }
    part[lid] = s;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            part[lid] = part[lid] + part[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        out[0] = part[0] / f32(p.n);
    }
}
