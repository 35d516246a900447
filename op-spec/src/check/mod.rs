//! The checker: one `check_*` function per cross-cutting rule of a declaration, each stated in
//! a one-line comment, all reporting into one [`Ctxt`]. It reads kernel files (relative to the
//! declaring crate) but never generates code. This module owns the orchestration, the required
//! keys and the category x tolerance table; each submodule owns one family of rules.

mod backward;
mod constraints;
mod kernels;
mod outputs;
mod sharing;
mod symbols;
mod values;

use crate::contract::{Category, Contract, Tolerance};
use crate::ctxt::Ctxt;
use crate::model::*;
use crate::reference::{check_reference_fn, RefShape};
use crate::wgsl::KernelInfo;
use backward::{check_backward_fits_signature, check_differentiable_reference_is_generic, check_jvp_arity, check_subgradient};
use constraints::{check_constant_constraints, check_contradictory_constraints, check_output_dims_nonnegative};
use kernels::{check_binding_coverage, load_and_check_kernel};
use outputs::{check_data_dependent_dims, check_data_dependent_support};
use proc_macro2::Span;
use sharing::{check_license, check_public_metadata};
use std::path::PathBuf;
use symbols::{check_constraint_operands, check_names_unique, check_symbols_bound};
use values::{check_domain_inputs, check_signed_zero_scope};

pub use kernels::cuda_includes;
pub use symbols::bound_dim_symbols;

/// A kernel file and the headers it includes, as read at compile time.
#[derive(Clone, Debug)]
pub struct LoadedKernel {
    /// Absolute path of the source file.
    pub abs_path: PathBuf,
    /// The source bytes (hashed into identity).
    pub bytes: Vec<u8>,
    /// `#include "..."` headers: (path relative to the crate, absolute path, bytes), sorted.
    pub headers: Vec<(String, PathBuf, Vec<u8>)>,
    /// Entry point and workgroup size.
    pub info: KernelInfo,
}

/// The outcome of a successful check: everything the expansion needs.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The span-free contract, with each kernel's entry point resolved.
    pub contract: Contract,
    /// What the expansion needs to know about the reference function.
    pub reference: RefShape,
    /// The loaded kernels, in declaration order.
    pub kernels: Vec<LoadedKernel>,
}

/// Inputs to the checker besides the attribute.
pub struct CheckInput<'a> {
    /// The parsed attribute.
    pub attr: &'a OpAttr,
    /// The reference function the attribute is on.
    pub func: &'a syn::ItemFn,
    /// The doc comment of the function, the op's description.
    pub description: &'a str,
    /// Directories kernel paths are resolved against, in order: the declaring crate's manifest
    /// dir, then the declaring source file's dir.
    pub base_dirs: &'a [PathBuf],
}

/// Runs every rule. Returns `Some` only if no rule reported an error.
pub fn check(cx: &Ctxt, input: &CheckInput<'_>) -> Option<Checked> {
    let attr = input.attr;
    check_required_keys(cx, attr);
    check_category_tolerance(cx, attr);
    let mut reference = RefShape::default();
    let mut kernels = Vec::new();
    if let Some(sig) = &attr.signature {
        check_names_unique(cx, sig);
        let dims = bound_dim_symbols(sig);
        check_symbols_bound(cx, attr, sig, &dims);
        check_constraint_operands(cx, sig);
        check_constant_constraints(cx, sig);
        check_contradictory_constraints(cx, sig, &dims);
        check_output_dims_nonnegative(cx, attr, sig, &dims);
        check_data_dependent_dims(cx, attr, sig, &symbols::bound_with_params(sig, &dims));
        check_backward_fits_signature(cx, attr, sig);
        check_jvp_arity(cx, attr, sig);
        check_domain_inputs(cx, attr, sig);
        reference = check_reference_fn(cx, input.func, sig, &dims);
        check_differentiable_reference_is_generic(cx, attr, sig, &reference, input.func);
        for k in &attr.kernels {
            // A kernel is compared with its source only if its descriptor is sound: a source
            // checked against a broken descriptor would only repeat the descriptor's error.
            let descriptor_ok = check_binding_coverage(cx, k, sig, &dims);
            if let Some(lk) = load_and_check_kernel(cx, k, sig, input.base_dirs, descriptor_ok) {
                kernels.push(lk);
            }
        }
    }
    check_data_dependent_support(cx, attr);
    check_subgradient(cx, attr);
    check_signed_zero_scope(cx, attr);
    check_license(cx, attr);
    check_public_metadata(cx, attr, input.description);
    if cx.has_errors() {
        return None;
    }
    let mut contract = attr.to_contract()?;
    for (k, lk) in contract.kernels.iter_mut().zip(&kernels) {
        k.entry = lk.info.entry.clone();
    }
    Some(Checked { contract, reference, kernels })
}

fn call_site(attr: &OpAttr) -> Span {
    attr.span.unwrap_or_else(Span::call_site)
}

// Rule: name, version, signature, category, tolerance and backward must all be declared (a
// key written with a malformed value is reported there, not again as missing).
fn check_required_keys(cx: &Ctxt, attr: &OpAttr) {
    let required: [(&str, &str); 6] = [
        ("name", "name = \"user/example/my_op\""),
        ("version", "version = 1"),
        ("signature", "signature(x: f32[n]) -> f32[n]"),
        ("category", "category = elementwise"),
        ("tolerance", "tolerance = ulp(1)"),
        ("backward", "backward = none"),
    ];
    let missing: Vec<(&str, &str)> = required.into_iter().filter(|(k, _)| !attr.keys_present.iter().any(|p| p == k)).collect();
    match missing.as_slice() {
        [] => {}
        [(key, example)] => {
            cx.error(syn::Error::new(call_site(attr), format!("missing key `{key}`: every op declares it; add e.g. `{example}`")))
        }
        many => {
            let keys: Vec<String> = many.iter().map(|(k, _)| format!("`{k}`")).collect();
            let examples: Vec<String> = many.iter().map(|(_, e)| format!("`{e}`")).collect();
            cx.error(syn::Error::new(
                call_site(attr),
                format!("missing keys {}: every op declares them; add e.g. {}", keys.join(", "), examples.join(", ")),
            ));
        }
    }
}

/// The category x tolerance table: `Ok` if legal, else why not and what to use instead.
pub fn category_tolerance_rule(cat: Category, tol: &Tolerance) -> Result<(), &'static str> {
    use Category::*;
    match (cat, tol) {
        // Selection only compares, selects and permutes: it must reproduce values bit for bit.
        (Selection, Tolerance::Exact) => Ok(()),
        (Selection, _) => Err("`selection` ops do no arithmetic on values, so they must be `exact`"),
        // Integer arithmetic is exact on every backend.
        (Integer, Tolerance::Exact) => Ok(()),
        (Integer, _) => Err("`integer` ops are exact on every backend; use `exact`"),
        // Float arithmetic rounds: `exact` would reject correct kernels (FMA, reassociation).
        (_, Tolerance::Exact) => Err("`exact` is legal only for `selection` and `integer`; float arithmetic rounds, use `ulp(k)`"),
        // Elementwise and transcendental ops are bounded per element in ulps.
        (Elementwise | Transcendental, Tolerance::Ulp(_)) => Ok(()),
        // Reductions and contractions accumulate error with length: a fixed ulp bound is wrong.
        (Reduction | Contraction, Tolerance::Accum(_)) => Ok(()),
        (Reduction | Contraction, _) => {
            Err("`reduction` and `contraction` error grows with length; use `accum(k)` (a matmul cannot slip past with `loose`)")
        }
        // `accum` is only meaningful where there is an accumulation.
        (_, Tolerance::Accum(_)) => Err("`accum(k)` is for `reduction` and `contraction`; use `ulp(k)`"),
        // `loose` is the approximate category's privilege and nobody else's.
        (Approximate, Tolerance::Loose { .. } | Tolerance::Ulp(_)) => Ok(()),
        (_, Tolerance::Loose { .. }) => Err("`loose(rtol, atol)` is legal only for `approximate` ops; use `ulp(k)`"),
    }
}

// Rule: the tolerance class must be legal for the category (table in `category_tolerance_rule`).
fn check_category_tolerance(cx: &Ctxt, attr: &OpAttr) {
    let (Some(cat), Some(tol)) = (&attr.category, &attr.tolerance) else { return };
    if let Err(why) = category_tolerance_rule(cat.value, &tol.value) {
        cx.error(tol.span.error(format!("tolerance `{}` is illegal for category `{}`: {why}", tol.value, cat.value.name())));
    }
}

/// Checks a whole declaration from tokens (used by tests and by the macro).
pub fn check_tokens(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
    base_dirs: &[PathBuf],
) -> Result<(Checked, OpAttr), Vec<syn::Error>> {
    let cx = Ctxt::new();
    let func: syn::ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => {
            cx.error(e);
            return Err(cx.check().err().unwrap_or_default());
        }
    };
    let attr = crate::parse::parse_attr(&cx, attr);
    let description = crate::canon::doc_comment(&func.attrs);
    let checked = check(&cx, &CheckInput { attr: &attr, func: &func, description: &description, base_dirs });
    match (cx.check(), checked) {
        (Ok(()), Some(c)) => Ok((c, attr)),
        (Err(e), _) => Err(e),
        (Ok(()), None) => {
            Err(vec![syn::Error::new(Span::call_site(), "op-spec: the declaration did not check (internal: no error recorded)")])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    pub(super) fn errs(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> Vec<String> {
        match check_tokens(attr, item, &[]) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    fn median_fn() -> proc_macro2::TokenStream {
        quote!(
            pub fn windowed_median<T: Real>(x: &[T], w: u32) -> Vec<T> {
                todo!()
            }
        )
    }

    #[test]
    fn the_median_declaration_checks() {
        let e = errs(
            quote!(name = "user/example/windowed_median", version = 1,
                signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
                category = selection, tolerance = exact, backward = vjp(windowed_median_vjp),
                subgradient = "cotangent routed to the selected element", license = "MIT"),
            median_fn(),
        );
        assert!(e.is_empty(), "{e:?}");
    }
    #[test]
    fn category_tolerance_table_rejects_loose_matmul() {
        assert!(category_tolerance_rule(Category::Contraction, &Tolerance::Loose { rtol: 1e-3, atol: 0.0 }).is_err());
        assert!(category_tolerance_rule(Category::Contraction, &Tolerance::Accum(4)).is_ok());
        assert!(category_tolerance_rule(Category::Selection, &Tolerance::Ulp(0)).is_err());
        assert!(category_tolerance_rule(Category::Elementwise, &Tolerance::Exact).is_err());
        assert!(category_tolerance_rule(Category::Approximate, &Tolerance::Loose { rtol: 1e-2, atol: 1e-4 }).is_ok());
    }
    #[test]
    fn reference_parameters_must_agree() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none),
            quote!(
                fn f(x: &[f64], w: i32) -> Vec<f32> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].contains("must be `&[f32]`"));
        assert!(e[1].contains("must be `u32`"));
    }

    #[test]
    fn licence_and_subgradient_rules() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = selection, tolerance = exact,
                backward = vjp(g), visibility = workspace),
            quote!(
                fn f<T: Real>(x: &[T]) -> Vec<T> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e.iter().any(|m| m.contains("add `subgradient = ")));
        assert!(e.iter().any(|m| m.contains("a `workspace` op needs a licence")));
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = selection, tolerance = exact,
                backward = none, license = "MIT AND NotALicence"),
            quote!(
                fn f<T: Real>(x: &[T]) -> Vec<T> {
                    todo!()
                }
            ),
        );
        assert!(e[0].contains("is not a valid SPDX licence expression"), "{e:?}");
    }

    #[test]
    fn a_malformed_key_is_not_also_missing() {
        let e = errs(
            quote!(name = "Bad Name", version = 0, signature(x: f8e4m3[n]) -> f32[n], category = pointwise, tolerance = approx, backward = autodiff),
            quote!(
                fn f(x: &[f32]) -> Vec<f32> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 6, "{e:?}");
        assert!(e.iter().all(|m| !m.starts_with("missing key")), "{e:?}");
    }
    #[test]
    fn missing_keys_are_all_reported() {
        let e = errs(
            quote!(name = "a/b"),
            quote!(
                fn f() {}
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("missing keys `version`, `signature`, `category`, `tolerance`, `backward`: every op declares them"),
            "{e:?}"
        );
    }
}
