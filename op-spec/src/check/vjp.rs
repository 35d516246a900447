//! VJP kernels (`backward = vjp(rule, kernel(...), cpu(f), ...)`): each goes through the very
//! checks a forward kernel does (`kernels::check_kernel_set`, `dtypes::check_cpu_set` for the
//! `cpu` ones), against the VJP op's signature, which this
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

/// The VJP's `cpu` kernels declared under `backward = vjp(...)` (empty when none).
pub(super) fn vjp_cpu(attr: &OpAttr) -> &[SCpuKernel] {
    match &attr.backward {
        Some(SBackward::Declared { vjp: Some(_), vjp_cpu, .. }) => vjp_cpu,
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
    let (kernels, cpu) = (vjp_kernels(attr), vjp_cpu(attr));
    let first = match (kernels.first(), cpu.first()) {
        (Some(k), _) => k.span,
        (None, Some(c)) => c.span,
        (None, None) => return Vec::new(),
    };
    if matches!(attr.output, Some(SShapeClass::Bounded(..) | SShapeClass::Dynamic(_))) {
        cx.error(first.error("VJP kernels need outputs whose shapes the signature fixes; this op's outputs are data-dependent"));
        return Vec::new();
    }
    let vsig = vjp_signature(sig);
    if !derived_names_unique(cx, &vsig, sig) {
        return Vec::new();
    }
    super::dtypes::check_cpu_set(cx, cpu, &vsig, "VJP `cpu` kernel");
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

#[cfg(test)]
mod tests {
    use crate::check::tests::errs;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn item() -> TokenStream {
        quote!(
            fn g<T: Real>(x: &[T]) -> Vec<T> {
                todo!()
            }
        )
    }

    fn with_backward(sig: TokenStream, backward: TokenStream, rest: TokenStream) -> Vec<String> {
        errs(quote!(name = "t/g", version = 1, #sig, category = elementwise, tolerance = ulp(1), backward = #backward, #rest), item())
    }

    /// The VJP's `cpu` kernels go through the rule of the op's own: members that exist, no two
    /// serving one instance, a selection only with dtype variables, and a static output.
    #[test]
    fn vjp_cpu_kernels_are_checked_like_the_ops_own() {
        let sig = quote!(signature<T: f16 | f32 | f64>(x: T[n]) -> T[n]);
        let e = with_backward(sig.clone(), quote!(vjp(g_vjp, cpu(a, dtypes(T: f32 | f16)), cpu(b, dtypes(T: f64)))), quote!());
        assert!(e.is_empty(), "{e:?}");
        assert!(with_backward(sig.clone(), quote!(vjp(g_vjp, cpu = all)), quote!(cpu = fwd)).is_empty());
        let e = with_backward(sig.clone(), quote!(vjp(g_vjp, cpu(a, dtypes(T: f32)), cpu = all)), quote!());
        assert_eq!(e, ["VJP `cpu` kernel `all` and VJP `cpu` kernel `a` both serve `T = f32`: an instance has one VJP `cpu` kernel; narrow their `dtypes(...)` so that each instance has at most one"]);
        let e = with_backward(sig.clone(), quote!(vjp(g_vjp, cpu(a, dtypes(T: bf16)))), quote!());
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("VJP `cpu` kernel `a`") && e[0].contains("bf16"), "{}", e[0]);
        let plain = quote!(signature(x: f32[n]) -> f32[n]);
        let e = with_backward(plain.clone(), quote!(vjp(g_vjp, cpu(a, dtypes(T: f32)))), quote!());
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("VJP `cpu` kernel `a` selects members of dtype variables, but this op declares none"), "{}", e[0]);
        let e = with_backward(plain.clone(), quote!(vjp(g_vjp, cpu = a, cpu = b)), quote!());
        assert_eq!(e, ["VJP `cpu` kernel `b` and VJP `cpu` kernel `a` both serve this op, which has no dtype variables and so one instance: an instance has one VJP `cpu` kernel; keep one"]);
        let e = with_backward(quote!(signature(x: f32[n]) -> f32[k]), quote!(vjp(g_vjp, cpu = a)), quote!(output = bounded(n)));
        assert!(e.iter().any(|e| e.starts_with("VJP kernels need outputs whose shapes the signature fixes")), "{e:?}");
    }

    /// Which function serves the VJP on the CPU is in the contract, hence in the identity; a
    /// declaration without one keeps the encoding it had before VJP `cpu` kernels existed.
    #[test]
    fn a_vjp_cpu_kernel_is_in_the_identity_and_absent_ones_keep_the_encoding() {
        let hash = |backward: TokenStream| {
            let attr = quote!(name = "t/g", version = 1, signature<T: f32 | f64>(x: T[n]) -> T[n], category = elementwise,
                tolerance = ulp(1), backward = #backward);
            let (c, _) = crate::check::check_tokens(attr, item(), &[]).map_err(|e| e[0].to_string()).unwrap();
            (c.hash, c.contract_json)
        };
        let (plain, json) = hash(quote!(vjp(g_vjp)));
        assert!(!json.contains("vjp_cpu"), "{json}");
        let (a, json) = hash(quote!(vjp(g_vjp, cpu = fast)));
        assert!(json.contains("\"vjp_cpu\"") && json.contains("fast"), "{json}");
        let (b, _) = hash(quote!(vjp(g_vjp, cpu = other)));
        let (c, _) = hash(quote!(vjp(g_vjp, cpu(fast, dtypes(T: f32)))));
        assert!(plain != a && a != b && a != c && b != c);
    }

    /// A `cpu` entry inside `vjp(...)` parses beside GPU kernels; anything else after the rule is
    /// refused with the form to write.
    #[test]
    fn vjp_takes_gpu_and_cpu_kernels_after_the_rule() {
        let sig = quote!(signature(x: f32[n]) -> f32[n]);
        let e = with_backward(sig.clone(), quote!(vjp(g_vjp, cpu = a, other = b)), quote!());
        assert_eq!(
            e,
            ["after the rule, `vjp(...)` takes only the VJP's kernels: `vjp(my_op_vjp, kernel(wgsl = \"...\", ...), cpu(my_op_vjp_cpu))`"]
        );
        let e = with_backward(sig, quote!(vjp(g_vjp, cpu(a, b, c))), quote!());
        assert_eq!(e, ["expected `cpu(path, dtypes(T: f32))`, or `cpu = path` for every member"]);
    }
}
