// Shared by builtin/maximum's and builtin/minimum's kernels (f32 and f16, forward and VJP;
// included with `// @include "lib/takes_first.wgsl"`): whether the selection takes `x` over
// `y`, decided on the bits (a float compare sees -0 and +0 as equal and may treat subnormals as
// zero): x is NaN, or y is not and x is on the wanted side of y in total order (or equal: then
// the bits are equal).
// @include "nan.wgsl"
// @include "total_order.wgsl"

fn takes_first(x: f32, y: f32, larger: bool) -> bool {
    if (is_nan_(x)) { return true; }
    if (is_nan_(y)) { return false; }
    let kx = total_order_key(x);
    let ky = total_order_key(y);
    return select(kx <= ky, kx >= ky, larger);
}
