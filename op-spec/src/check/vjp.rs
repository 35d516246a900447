//! VJP kernels (`backward = vjp(rule, kernel(...), ...)`): each goes through the very checks a
//! forward kernel does (`kernels::check_kernel_set`), against the VJP op's signature, which this
//! module derives from the op's by the rule `op_contract::vjp` states (the op's arguments, then
//! a cotangent `d_<output>` per output; a gradient `d_<input>` per float input). Reads kernel
//! files; generates nothing.

use super::paths::Base;
use super::LoadedKernel;
use crate::ctxt::Ctxt;
use crate::model::*;
use op_contract::vjp::grad_name;

/// The VJP kernels declared under `backward = vjp(...)` (empty when none).
pub(super) fn vjp_kernels(attr: &OpAttr) -> &[SKernel] {
    match &attr.backward {
        Some(SBackward::Declared { vjp: Some(_), vjp_kernels, .. }) => vjp_kernels,
        _ => &[],
    }
}

/// The VJP op's signature: the op's, with a cotangent per output appended to the arguments and
/// a gradient per float tensor input as the outputs. Derived names keep the spans of the tensors
/// they derive from.
pub(super) fn vjp_signature(sig: &SSignature) -> SSignature {
    let derived = |t: &STensor| STensor { name: syn::Ident::new(&grad_name(&t.name.to_string()), t.name.span()), named: true, ..t.clone() };
    let mut v = sig.clone();
    v.args.extend(sig.outputs.iter().map(|o| SArg::Tensor(derived(o))));
    v.outputs = sig.inputs().filter(|t| t.dtype.value.is_float()).map(derived).collect();
    v
}

// Rule: VJP kernels need outputs whose shapes the signature fixes, and derived names that no
// argument already has; then each is checked as a forward kernel is, against the VJP signature
// (the op's inputs `read`, the cotangents `read`, the gradients written). Returns the loaded
// kernels, in declaration order.
pub(super) fn check_vjp_kernels(cx: &Ctxt, attr: &OpAttr, sig: &SSignature, bases: &[Base]) -> Vec<LoadedKernel> {
    let kernels = vjp_kernels(attr);
    let Some(first) = kernels.first() else { return Vec::new() };
    if matches!(attr.output, Some(SShapeClass::Bounded(..) | SShapeClass::Dynamic(_))) {
        cx.error(first.span.error("VJP kernels need outputs whose shapes the signature fixes; this op's outputs are data-dependent"));
        return Vec::new();
    }
    let vsig = vjp_signature(sig);
    if !derived_names_unique(cx, &vsig, sig) {
        return Vec::new();
    }
    super::kernels::check_kernel_set(cx, kernels, &vsig, bases)
}

/// A derived name (`d_out`, `d_x`) that an argument of the op already has is reported on that
/// argument.
fn derived_names_unique(cx: &Ctxt, vsig: &SSignature, sig: &SSignature) -> bool {
    let before = cx.error_count();
    let derived: Vec<String> =
        vsig.args[sig.args.len()..].iter().map(|a| a.ident().to_string()).chain(vsig.outputs.iter().map(|o| o.name.to_string())).collect();
    for a in &sig.args {
        let n = a.ident().to_string();
        if derived.contains(&n) {
            cx.error(syn::Error::new(
                a.ident().span(),
                format!("`{n}` is the name the VJP op gives a cotangent or gradient (`d_<tensor>`); rename this argument"),
            ));
        }
    }
    cx.error_count() == before
}
