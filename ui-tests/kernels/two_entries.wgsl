// Like double.wgsl, with a second compute entry point: the descriptor must choose one.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn double_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[i] = x[i] + x[i];
}

@compute @workgroup_size(64)
fn triple_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[i] = x[i] + x[i] + x[i];
}
