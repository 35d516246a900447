//! The reduction length of an output element, which enters the `accum` bound as
//! `ceil(log2 len)`. Owns reading it from the signature and the case's binding; it must not
//! run the reference.

use super::super::Case;
use op_core::op::RegisteredOp;
use op_core::tensor::Tensor;

/// Symbols of input dims that the outputs `which` admits do not mention: the ones they
/// contract (`matmul`'s `k`; for its VJP's `d_a[m, k]` alone, `n`).
fn contracted(op: &RegisteredOp, which: impl Fn(usize) -> bool) -> Vec<usize> {
    let sig = &op.contract.signature;
    let mut in_out: Vec<&str> = Vec::new();
    for (_, o) in sig.outputs.iter().enumerate().filter(|(i, _)| which(*i)) {
        o.dims.iter().for_each(|d| d.symbols(&mut in_out));
    }
    sig.dim_symbols().iter().filter(|s| !in_out.contains(&s.as_str())).filter_map(|s| op.plan.syms.iter().position(|x| x == s)).collect()
}

/// The reduction length given the contracted symbols `k` (see [`output_reduction_len`]).
fn length(op: &RegisteredOp, case: &Case, k: &[usize]) -> usize {
    let largest = case.inputs.iter().map(Tensor::numel).max().unwrap_or(1).max(1);
    if k.is_empty() {
        let shaped = op.contract.signature.inputs().zip(&case.inputs).filter(|(sig, _)| {
            let mut syms: Vec<&str> = Vec::new();
            sig.dims.iter().for_each(|d| d.symbols(&mut syms));
            !syms.is_empty()
        });
        return shaped.map(|(_, t)| t.numel()).min().unwrap_or(largest).max(1);
    }
    let prod = k.iter().map(|&i| case.shape.syms.get(i).copied().unwrap_or(1).max(1) as usize).fold(1usize, usize::saturating_mul);
    prod.min(largest).max(1)
}

/// Reduction length of output `out` of a case for `accum` (only `ceil(log2 len)` enters the
/// bound, so an estimate off by a small factor changes the bound little): the larger of
/// - the product of the dims that output contracts (input dim symbols its dims do not
///   mention: `matmul`'s `k`, `sum`'s `n`, the `n` of `matmul`'s VJP output `d_a[m, k]`),
///   capped by the largest input. Each output has its own: a VJP's cotangents contract
///   different dims, and before, one length (the dims no output mentions, none for a VJP)
///   served every output, so `d_a` of a 1x2 by 2x30 product was bounded as a sum of 2 terms
///   where it sums 30;
/// - the case's own length, that one: the product of the dims no output mentions, or where
///   every symbol also shapes an output (`conv1d`'s `n - m + 1`, a scan, a VJP), the smallest
///   input whose shape mentions a symbol: an output element of such an op combines at most a
///   window of each input, and the window is no longer than the shortest of them (`conv1d`: `m`
///   terms; a scan over one input: `n`). Inputs of fixed shape (`f32[3]` coefficients, rank-0
///   scalars) are left out: they are parameters of the terms, not the terms. It stays a floor
///   because an output may reduce over a dim it mentions (a layer norm VJP's `d_gamma[n]`
///   normalises each row of `x[m, n]` over `n` before it sums over `m`).
pub fn output_reduction_len(op: &RegisteredOp, case: &Case, out: usize) -> usize {
    length(op, case, &contracted(op, |o| o == out)).max(length(op, case, &contracted(op, |_| true)))
}

/// Reduction length of a case: the longest of its outputs' ([`output_reduction_len`]).
pub fn reduction_len(op: &RegisteredOp, case: &Case) -> usize {
    (0..op.contract.signature.outputs.len().max(1)).map(|o| output_reduction_len(op, case, o)).max().unwrap_or(1)
}
