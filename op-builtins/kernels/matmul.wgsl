// builtin/matmul: out[i, j] = sum_p a[i, p] b[p, j], row-major, tiled: one workgroup of 256
// invocations per 16 x 16 tile of the output, one invocation per output element. Each step
// loads a 16 x 16 tile of `a` and of `b` into workgroup memory (every element read once per
// tile instead of once per output element) and sums the tile's 16 products of its row and
// column as a balanced tree, pushed as one unit on a binary counter; the products past the
// last whole tile are pushed one by one. Every product is rounded at most about
// ceil(log2 k) + 1 times: within `accum`'s pairwise bound on any input, and the same
// arithmetic, in the same order, as one invocation per element without tiles. Loop iterations
// per invocation: k / 16 + 15 + 24, below lavapipe's limit of 65535 (gallivm's loop limiter)
// for every k <= 16 * 65490 (1_047_840). Tiles are numbered along rows of the launch
// (`workgroup_id.x + workgroup_id.y * num_workgroups.x`), so any number of tiles launches.
struct Params { m: u32, k: u32, n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/pairwise.wgsl"

// @include "lib/nonfinite.wgsl"

const TILE: u32 = 16u;
var<workgroup> ta: array<f32, 256>; // ta[r * 16 + c] = a[row r of the tile, column q0 + c]
var<workgroup> tb: array<f32, 256>; // tb[r * 16 + c] = b[row q0 + r, column c of the tile]

// Loads the k-tile starting at q0 (zeros outside the matrices) and waits for every invocation.
fn load(i: u32, j: u32, q0: u32, r: u32, c: u32, lid: u32) {
    var va = 0.0;
    if (i < p.m && q0 + c < p.k) { va = a[i * p.k + q0 + c]; }
    var vb = 0.0;
    if (j < p.n && q0 + r < p.k) { vb = b[(q0 + r) * p.n + j]; }
    ta[lid] = va;
    tb[lid] = vb;
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let tiles_n = (p.n + TILE - 1u) / TILE;
    let tile = wid.x + wid.y * nwg.x;
    if (tile >= ((p.m + TILE - 1u) / TILE) * tiles_n) { return; }
    let r = lid / TILE;
    let c = lid % TILE;
    let i = (tile / tiles_n) * TILE + r;
    let j = (tile % tiles_n) * TILE + c;
    let ar = r * TILE;
    var q0 = 0u;
    for (; q0 + 15u < p.k; q0 = q0 + TILE) {
        load(i, j, q0, r, c, lid);
        push((((fin_prod(ta[ar + 0u], tb[0u * TILE + c]) + fin_prod(ta[ar + 1u], tb[1u * TILE + c]))
            + (fin_prod(ta[ar + 2u], tb[2u * TILE + c]) + fin_prod(ta[ar + 3u], tb[3u * TILE + c])))
            + ((fin_prod(ta[ar + 4u], tb[4u * TILE + c]) + fin_prod(ta[ar + 5u], tb[5u * TILE + c]))
            + (fin_prod(ta[ar + 6u], tb[6u * TILE + c]) + fin_prod(ta[ar + 7u], tb[7u * TILE + c]))))
            + (((fin_prod(ta[ar + 8u], tb[8u * TILE + c]) + fin_prod(ta[ar + 9u], tb[9u * TILE + c]))
            + (fin_prod(ta[ar + 10u], tb[10u * TILE + c]) + fin_prod(ta[ar + 11u], tb[11u * TILE + c])))
            + ((fin_prod(ta[ar + 12u], tb[12u * TILE + c]) + fin_prod(ta[ar + 13u], tb[13u * TILE + c]))
            + (fin_prod(ta[ar + 14u], tb[14u * TILE + c]) + fin_prod(ta[ar + 15u], tb[15u * TILE + c])))));
        workgroupBarrier();
    }
    if (q0 < p.k) {
        load(i, j, q0, r, c, lid);
        for (var t = 0u; q0 + t < p.k; t = t + 1u) {
            push(fin_prod(ta[ar + t], tb[t * TILE + c]));
        }
    }
    if (i < p.m && j < p.n) {
        out[i * p.n + j] = finish(pushed());
    }
}
