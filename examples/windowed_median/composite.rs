//! The first rung of the backward ladder: the same sliding-window median, declared as a
//! composite of built-ins instead of with a hand-written VJP. `builtin/unfold` lays the windows
//! out as the rows of an `(n - w + 1) x w` matrix and `builtin/median_rows` takes each row's
//! median; the tape differentiates the graph through the built-ins' own VJPs. Nothing is
//! written by hand but the graph, and the price is visible before anything runs: the window
//! matrix, `n w` elements, is in the tape's memory plan.

use op_runtime::builtins::{median_rows, unfold};
use op_runtime::graph::{Graph, GraphError, Var};
use op_runtime::{op, Real, Scalar};

/// Median of every odd-sized window of `x` (`w` at most 31), as the composite
/// `median_rows(unfold(x, w, 1))`: the reference is the built-ins' references composed, and the
/// backward is derived from the graph `windowed_median_graph` on the tape.
#[op(
    name = "user/example/windowed_median_composite", version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> T[n - w + 1],
    category = selection, tolerance = exact,
    backward = composite(windowed_median_graph),
    subgradient = "cotangent routed to the selected element (of equal elements the earlier one)",
    license = "MIT",
)]
pub fn windowed_median_composite<T: Real>(x: &[T], w: u32) -> Vec<T> {
    median_rows(&unfold(x, w, 1), w as usize)
}

/// The graph: `median_rows(unfold(x, w, step 1))`, two built-ins.
pub fn windowed_median_graph(g: &mut dyn Graph, x: &[Var], p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
    let windows = g.call1("builtin/unfold", &[x[0]], &[p[0], Scalar::U32(1)])?;
    Ok(vec![g.call1("builtin/median_rows", &[windows], &[])?])
}
