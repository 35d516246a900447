//! The checker: one `check_*` function per cross-cutting rule of a declaration, each stated in
//! a one-line comment, all reporting into one [`Ctxt`]. It reads kernel files (relative to the
//! declaring crate) but never generates code. This module owns the orchestration, the required
//! keys and the category x tolerance table; each submodule owns one family of rules.

mod backward;
mod broadcast;
mod category;
mod constraints;
mod cuda;
mod dtypes;
mod floats;
mod kernels;
mod magnitude;
mod outputs;
#[cfg(test)]
mod parity_tests;
mod paths;
mod placement;
mod sharing;
mod solve;
mod symbols;
mod values;
mod vjp;

use crate::contract::{Category, Contract, Tolerance};
use crate::ctxt::Ctxt;
use crate::model::*;
use crate::plan::ShimPlan;
use crate::reference::{check_reference_fn, RefFn, RefShape};
use crate::wgsl::KernelInfo;
use backward::{check_backward_fits_signature, check_differentiable_reference_is_generic, check_jvp_arity, check_subgradient};
use broadcast::check_broadcast_signature;
use category::{check_integer_category_outputs, check_nan_policy_has_floats, check_rounding_category_has_float_output};
use constraints::{check_bound_nonnegative, check_constant_constraints, check_contradictory_constraints, check_division_by_zero};
use constraints::{check_output_dims_nonnegative, Solver};
use floats::{check_float_constraint_terms, check_float_constraints_satisfiable};
use kernels::check_kernel_set;
use magnitude::check_magnitude_inputs;
use outputs::{check_data_dependent_dims, check_data_dependent_support};
use placement::check_module_level;
use proc_macro2::{Span, TokenStream};
use sharing::{check_license, check_public_metadata, check_reserved_namespace};
use std::path::PathBuf;
use symbols::{check_constraint_operands, check_names_unique, check_symbols_bound};
use values::{check_domain_inputs, check_signed_zero_scope};

pub use kernels::cuda_includes;
pub use placement::Location;
pub use symbols::bound_dim_symbols;

/// A kernel file and the headers it includes, as read at compile time.
#[derive(Clone, Debug)]
pub struct LoadedKernel {
    /// Absolute, normalised path of the source file inside the crate: the file the checker
    /// read, which the expansion embeds (`include_bytes!`) and nothing resolves again.
    pub abs_path: PathBuf,
    /// The source bytes (hashed into identity).
    pub bytes: Vec<u8>,
    /// `#include "..."` headers: (path relative to the crate, absolute path, bytes), sorted;
    /// resolved once, like the kernel.
    pub headers: Vec<(String, PathBuf, Vec<u8>)>,
    /// Entry point and workgroup size.
    pub info: KernelInfo,
}

/// The outcome of a successful check: the validated model, everything the expansion needs
/// and nothing it has to decide.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The span-free contract, with each kernel's entry point resolved.
    pub contract: Contract,
    /// Its canonical JSON (what the runtime reads back).
    pub contract_json: String,
    /// The code's canonical tokens: the reference's, then every crate-local item it, its rules
    /// and its `cpu` kernel reach (see `closure`).
    pub body_tokens: String,
    /// The op's identity (see `op_contract::identity`).
    pub hash: [u8; 32],
    /// The doc comment: the op's description.
    pub description: String,
    /// What the expansion needs to know about the reference function.
    pub reference: RefShape,
    /// The loaded kernels, in declaration order: the forward kernels, then the VJP kernels
    /// (`backward = vjp(rule, kernel(...))`).
    pub kernels: Vec<LoadedKernel>,
    /// How the shims instantiate the user's functions.
    pub plan: ShimPlan,
    /// Whether the expansion emits the conformance and gradcheck `#[test]`s.
    pub generated_tests: bool,
    /// Where the declaration is written, `path:line` (path relative to the crate's manifest
    /// directory where it lies inside it); shown when two declarations claim one `name@version`.
    pub site: String,
}

/// Inputs to the checker besides the attribute.
pub struct CheckInput<'a> {
    /// The parsed attribute.
    pub attr: &'a OpAttr,
    /// The reference function the attribute is on.
    pub func: &'a RefFn,
    /// Directories kernel paths are resolved against, in order: the declaring crate's manifest
    /// dir, then the declaring source file's dir.
    pub base_dirs: &'a [PathBuf],
    /// Where the attribute is written, when the compiler says (for the placement rule).
    pub location: Option<&'a Location>,
    /// The declaring crate, for the identity's code closure (`None`: the reference's own
    /// tokens only, as in unit tests of single declarations).
    pub site: Option<&'a crate::closure::Site>,
}

/// Runs every rule. Returns `Some` only if no rule reported an error.
pub fn check(cx: &Ctxt, input: &CheckInput<'_>) -> Option<Checked> {
    let attr = input.attr;
    let description = crate::canon::doc_comment(&input.func.attrs);
    check_module_level(cx, attr, input.func, input.location);
    check_required_keys(cx, attr);
    check_rounding_category_has_float_output(cx, attr);
    if !category::rounding_without_float_output(attr) {
        check_category_tolerance(cx, attr);
    }
    let mut reference = RefShape::default();
    let mut kernels = Vec::new();
    let mut vjp_kernels = Vec::new();
    if let Some(sig) = &attr.signature {
        reference = check_signature(cx, input, sig);
        // One resolution of kernel paths, for the forward and the VJP kernels alike.
        let bases = paths::bases(input.base_dirs);
        kernels = check_kernel_set(cx, &attr.kernels, sig, &bases);
        vjp_kernels = vjp::check_vjp_kernels(cx, attr, sig, &bases);
    }
    check_data_dependent_support(cx, attr);
    check_subgradient(cx, attr);
    check_signed_zero_scope(cx, attr);
    check_license(cx, attr);
    check_reserved_namespace(cx, attr, input.site.and_then(|s| s.crate_name.as_deref()));
    check_public_metadata(cx, attr, &description);
    if cx.has_errors() {
        return None;
    }
    let mut contract = attr.to_contract()?;
    for (k, lk) in contract.kernels.iter_mut().zip(&kernels) {
        k.entry = lk.info.entry.clone();
    }
    if let crate::contract::Backward::Declared { vjp_kernels: declared, .. } = &mut contract.backward {
        for (k, lk) in declared.iter_mut().zip(&vjp_kernels) {
            k.entry = lk.info.entry.clone();
        }
    }
    // The forward kernels, then the VJP kernels: one list, hashed into the identity and embedded.
    kernels.extend(vjp_kernels);
    let plan = ShimPlan::new(attr, &contract, &reference);
    let contract_json = crate::canon::contract_json(&contract);
    let body_tokens = match crate::closure::code_tokens(input.func, attr, input.site) {
        Ok(code) => code,
        Err(e) => {
            cx.error(syn::Error::new(call_site(attr), e.to_string()));
            return None;
        }
    };
    let kbytes: Vec<crate::canon::KernelBytes<'_>> = kernels
        .iter()
        .zip(contract.embedded_kernels())
        .map(|(lk, k)| crate::canon::KernelBytes {
            path: &k.path,
            bytes: &lk.bytes,
            headers: lk.headers.iter().map(|(p, _, b)| (p.as_str(), b.as_slice())).collect(),
        })
        .collect();
    let hash = crate::canon::identity(&contract_json, &body_tokens, &kbytes);
    let generated_tests = attr.generated_tests.as_ref().is_none_or(|g| g.value);
    let site = declaration_site(input);
    Some(Checked { contract, contract_json, body_tokens, hash, description, reference, kernels, plan, generated_tests, site })
}

/// `path:line` of the declaration, the path relative to the manifest directory where possible.
fn declaration_site(input: &CheckInput<'_>) -> String {
    let Some(loc) = input.location else { return "<unknown>".to_string() };
    let rel = input.base_dirs.first().and_then(|m| loc.file.strip_prefix(m).ok()).unwrap_or(&loc.file);
    format!("{}:{}", rel.display(), loc.line)
}

/// The signature's rules: names and symbols, constraints, outputs, category against dtypes,
/// backward, the reference function.
fn check_signature(cx: &Ctxt, input: &CheckInput<'_>, sig: &SSignature) -> RefShape {
    let attr = input.attr;
    dtypes::check_var_sets(cx, sig);
    dtypes::check_vars_bound(cx, sig);
    dtypes::check_members_admitted(cx, attr, sig);
    dtypes::check_floats_typed_by_vars(cx, sig);
    dtypes::check_cpu_kernels(cx, attr, sig);
    check_names_unique(cx, sig);
    let dims = bound_dim_symbols(sig);
    check_symbols_bound(cx, attr, sig, &dims);
    check_constraint_operands(cx, attr, sig);
    check_float_constraint_terms(cx, sig, &constraints::all_symbols(sig, &dims));
    check_float_constraints_satisfiable(cx, sig);
    check_constant_constraints(cx, sig);
    {
        // Constraints over symbols of unparsed arguments are left out, so a contradiction
        // found is real; the rules below need every admissible input, which a gap hides.
        let solver = Solver::new(sig, &dims);
        check_contradictory_constraints(cx, &solver);
        if sig.gaps.none() {
            check_division_by_zero(cx, attr, &solver);
            check_output_dims_nonnegative(cx, attr, &solver);
            check_bound_nonnegative(cx, attr, &solver);
        }
    }
    check_data_dependent_dims(cx, attr, sig, &symbols::bound_with_params(sig, &dims));
    check_integer_category_outputs(cx, attr, sig);
    check_nan_policy_has_floats(cx, attr, sig);
    check_backward_fits_signature(cx, attr, sig);
    check_jvp_arity(cx, attr, sig);
    check_domain_inputs(cx, attr, sig);
    check_magnitude_inputs(cx, attr, sig);
    check_broadcast_signature(cx, attr, sig);
    let reference = check_reference_fn(cx, input.func, sig, &dims);
    check_differentiable_reference_is_generic(cx, attr, sig, &reference, input.func);
    reference
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

/// Parses the attribute and checks the declaration on `func` (what `#[op]` runs before it
/// generates anything): the validated model, or every error.
pub fn check_declaration(
    attr: TokenStream,
    func: &RefFn,
    base_dirs: &[PathBuf],
    location: Option<&Location>,
    site: Option<&crate::closure::Site>,
) -> Result<Checked, Vec<syn::Error>> {
    let cx = Ctxt::new();
    let attr = crate::parse::parse_attr(&cx, attr);
    let checked = check(&cx, &CheckInput { attr: &attr, func, base_dirs, location, site });
    match (cx.check(), checked) {
        (Ok(()), Some(c)) => Ok(c),
        (Err(e), _) => Err(e),
        (Ok(()), None) => {
            Err(vec![syn::Error::new(Span::call_site(), "op-spec: the declaration did not check (internal: no error recorded)")])
        }
    }
}

/// The item `#[op]` is on, as the reference function; anything else is an error.
pub fn parse_item(item: TokenStream) -> Result<RefFn, syn::Error> {
    let is_fn = item.clone().into_iter().any(|t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "fn"));
    RefFn::from_tokens(item.clone()).map_err(|e| {
        if is_fn {
            return e;
        }
        // At the item's keyword: the first token that is not an attribute or the visibility.
        let mut toks = item.into_iter().peekable();
        let mut at = e.span();
        while let Some(t) = toks.next() {
            match &t {
                proc_macro2::TokenTree::Punct(p) if p.as_char() == '#' => {
                    toks.next();
                }
                proc_macro2::TokenTree::Ident(i) if i == "pub" => {
                    toks.next_if(|t| matches!(t, proc_macro2::TokenTree::Group(_)));
                }
                _ => {
                    at = t.span();
                    break;
                }
            }
        }
        syn::Error::new(at, "`#[op]` goes on a free function, the op's reference implementation, not on this item; put it on a `fn`")
    })
}

/// Checks a whole declaration from tokens (used by tests): the validated model and the parsed
/// attribute, or every error.
pub fn check_tokens(attr: TokenStream, item: TokenStream, base_dirs: &[PathBuf]) -> Result<(Checked, OpAttr), Vec<syn::Error>> {
    let func = parse_item(item).map_err(|e| vec![e])?;
    let checked = check_declaration(attr.clone(), &func, base_dirs, None, None)?;
    Ok((checked, crate::parse::parse_attr(&Ctxt::new(), attr)))
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

    #[test]
    fn one_broken_argument_hides_no_other_error() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u3, y: f32[n] where n < n) -> f32[n],
                category = selection, tolerance = exact, backward = none),
            quote!(
                fn f(x: &[f64], w: u32, y: &[f32]) -> Vec<f32> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].starts_with("unknown dtype `u3`"));
        assert!(e[1].starts_with("constraint `n < n` can never hold"));
        assert!(e[2].starts_with("parameter 1 of reference `f` is tensor input `x: f32[..]` and must be `&[f32]`"));
        // A broken output: the other outputs and the arguments are still checked.
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where w > 4294967295) -> (a: f32[n], b: f33[n]),
                category = selection, tolerance = exact, backward = none),
            quote!(
                fn f(x: &[f32], w: i8) -> Vec<f32> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].starts_with("unknown dtype `f33`"));
    }

    #[test]
    fn aliased_element_types_are_left_to_the_type_checker() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: u16[n], k: u16) -> u16[n], category = integer, tolerance = exact, backward = none),
            quote!(
                fn f(x: &[Elem], k: crate::Elem) -> Vec<Elem> {
                    todo!()
                }
            ),
        );
        assert!(e.is_empty(), "{e:?}");
        // A known type that is not the dtype's is still refused here.
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: u16[n]) -> u16[n], category = integer, tolerance = exact, backward = none),
            quote!(
                fn f(x: &[u32]) -> Vec<u16> {
                    todo!()
                }
            ),
        );
        assert_eq!(e, vec!["parameter 1 of reference `f` is tensor input `x: u16[..]` and must be `&[u16]`".to_string()]);
    }

    #[test]
    fn methods_are_not_ops() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(1), backward = none),
            quote!(
                fn f<T: Real>(&self, x: &[T]) -> Vec<T> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("declare the op at module level: `f` is a method"), "{}", e[0]);
    }
}

#[cfg(test)]
mod generic_category_tests {
    use super::tests::errs;
    use quote::quote;

    /// The category x tolerance table holds at every instance of a dtype variable: an integer
    /// set cannot take a rounding tolerance, a float set cannot be `integer`.
    #[test]
    fn category_and_tolerance_rules_see_the_variables_members() {
        for (sig, cat, tol, ok) in [
            (quote!(signature<T: u32 | i32>(x: T[n]) -> T[n]), quote!(elementwise), quote!(ulp(1)), false),
            (quote!(signature<T: u32 | i32>(x: T[n]) -> T[n]), quote!(integer), quote!(exact), true),
            (quote!(signature<T: f32 | f64>(x: T[n]) -> T[n]), quote!(integer), quote!(exact), false),
            (quote!(signature<T: f32 | f64>(x: T[n]) -> T[n]), quote!(selection), quote!(ulp(1)), false),
            (quote!(signature<T: f16 | f32>(x: T[n]) -> T[n]), quote!(approximate), quote!(loose(1e-3, 0.0)), true),
            (quote!(signature<T: u32 | i32>(x: T[n]) -> T[n]), quote!(reduction), quote!(accum(2)), false),
        ] {
            let e = errs(
                quote!(name = "t/p", version = 1, #sig, category = #cat, tolerance = #tol, backward = none),
                quote!(
                    pub fn p<T: Copy>(x: &[T]) -> Vec<T> {
                        x.to_vec()
                    }
                ),
            );
            assert_eq!(e.is_empty(), ok, "{sig} {cat} {tol}: {e:?}");
        }
    }
}
