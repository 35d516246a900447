use op_runtime::op;

/// A differentiable op whose reference is fixed to f32: gradcheck could not run it in f64.
#[op(name = "ui/fail/not_generic", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(twice_vjp))]
pub fn twice(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v * 2.0).collect()
}

pub fn twice_vjp(_x: &[f32], g: &[f32]) -> Vec<f32> {
    g.iter().map(|v| v * 2.0).collect()
}

fn main() {
    let _ = twice(&[1.0]);
}
