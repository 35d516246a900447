//! Rule: `ulp(k)` (and `accum`, `loose`, and the categories they belong to) bound float rounding;
//! an op whose outputs are all integers is `integer` and `exact`.

use op_runtime::op;

#[op(
    name = "ui/test/double_u32",
    version = 1,
    signature(x: u32[n]) -> u32[n],
    category = elementwise,
    tolerance = ulp(0),
    backward = none,
)]
pub fn double_u32(x: &[u32]) -> Vec<u32> {
    x.iter().map(|v| v.wrapping_mul(2)).collect()
}

fn main() {
    let _ = double_u32(&[1]);
}
