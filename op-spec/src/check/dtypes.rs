//! Dtype variables (`signature<T: f16 | f32>(...)`): their sets, that a call can bind each from
//! its inputs, that a set does not mix floats and integers where the category forbids it, that
//! a generic op types every float by a variable, and the `dtypes(...)` selections of kernels and
//! of `cpu(...)`. Reads only the attribute; the per-member source checks are `kernels`'.

use crate::contract::{Category, DType, KernelLang};
use crate::ctxt::Ctxt;
use crate::model::*;
use op_contract::generic::{binding_text, wgsl_type, MAX_INSTANCES};

// Rule: a dtype variable has a name no dtype has, is declared once, and has a non-empty set of
// distinct members; all variables together span at most `MAX_INSTANCES` instances.
pub(super) fn check_var_sets(cx: &Ctxt, sig: &SSignature) {
    let mut instances: usize = 1;
    for (i, v) in sig.vars.iter().enumerate() {
        let name = v.name.to_string();
        if DType::from_name(&name).is_some() {
            cx.error(syn::Error::new(v.name.span(), format!("a dtype variable cannot be named `{name}`, a dtype's name; use e.g. `T`")));
        }
        if sig.vars[..i].iter().any(|w| w.name == v.name) {
            cx.error(syn::Error::new(
                v.name.span(),
                format!("dtype variable `{name}` is declared twice; declare it once with all its members"),
            ));
        }
        if v.members.is_empty() {
            cx.error(syn::Error::new(
                v.name.span(),
                format!("dtype variable `{name}` has no members; list the dtypes it ranges over: `{name}: f32 | f64`"),
            ));
        }
        check_members_listed_once(cx, v);
        instances = instances.saturating_mul(v.members.len().max(1));
    }
    if instances > MAX_INSTANCES {
        let last = sig.vars.last().map_or(sig.span, |v| v.span);
        cx.error(last.error(format!(
            "the dtype variables span {instances} instances (every combination of members); at most {MAX_INSTANCES} are allowed: split the op or narrow the sets"
        )));
    }
}

// Rule: a dtype variable's set, or a `dtypes(...)` selection of it, lists each member once.
fn check_members_listed_once(cx: &Ctxt, v: &SDTypeVar) {
    for (j, m) in v.members.iter().enumerate() {
        if v.members[..j].iter().any(|n| n.value == m.value) {
            cx.error(m.span.error(format!("`{}` is listed twice in `{}`; list each member once", m.value, v.name)));
        }
    }
}

/// Whether a call can pass a scalar parameter of dtype `d` as itself: every dtype but the half
/// precisions, which arrive as `f32` (the runtime's `Scalar` has no `f16` or `bf16`).
fn scalar_carries(d: DType) -> bool {
    !matches!(d, DType::f16 | DType::bf16)
}

// Rule: every dtype variable types a tensor input or a parameter: a call binds the variable from
// its inputs (a variable typing only outputs could not be chosen); one that types no tensor input
// is bound by a parameter's dtype, so each of its members must be a dtype a parameter carries as
// itself (a half-precision parameter arrives as `f32`: its instance could never be chosen).
pub(super) fn check_vars_bound(cx: &Ctxt, sig: &SSignature) {
    if sig.gaps.args {
        return;
    }
    let typed_in = |name: &syn::Ident| {
        sig.args.iter().any(|a| match a {
            SArg::Tensor(t) => t.var.as_ref() == Some(name),
            SArg::Param(p) => p.var.as_ref() == Some(name),
            SArg::Broken(_) => false,
        })
    };
    for v in &sig.vars {
        if sig.inputs().any(|t| t.var.as_ref() == Some(&v.name)) {
            continue;
        }
        if let Some(p) = sig.params().find(|p| p.var.as_ref() == Some(&v.name)) {
            for m in v.members.iter().filter(|m| !scalar_carries(m.value)) {
                cx.error(m.span.error(format!(
                    "`{}` types no tensor input, only parameter `{}`, so a call chooses its member by the parameter's dtype; a parameter of dtype `{d}` is passed as `f32`, so no call could choose `{} = {d}`: type a tensor input with `{}` (`x: {}[n]`), or drop `{d}` from `{}`",
                    v.name, p.name, v.name, v.name, v.name, v.name, d = m.value
                )));
            }
            continue;
        }
        if typed_in(&v.name) {
            continue;
        }
        let only_out = sig.outputs.iter().any(|o| o.var.as_ref() == Some(&v.name));
        let why = if only_out { "it types only outputs, so " } else { "" };
        cx.error(syn::Error::new(
            v.name.span(),
            format!(
                "dtype variable `{}` types no input: {why}a call cannot choose its member; type an input with it (`x: {}[n]`) or remove it",
                v.name, v.name
            ),
        ));
    }
}

// Rule: a variable's members are all floats or all integers, except in `selection` ops (which
// compare and move values without arithmetic, the same on every dtype): a rounding category's
// tolerance and an integer op's exactness are not the same contract on both kinds.
pub(super) fn check_members_admitted(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let Some(cat) = &attr.category else { return };
    if cat.value == Category::Selection {
        return;
    }
    for v in &sig.vars {
        let Some(first) = v.members.first() else { continue };
        if let Some(other) = v.members.iter().find(|m| m.value.is_float() != first.value.is_float()) {
            cx.error(other.span.error(format!(
                "`{}` mixes floats and integers (`{}` and `{}`): category `{}` {}; only `selection` may serve both; declare two variables or two ops",
                v.name,
                first.value,
                other.value,
                cat.value.name(),
                if cat.value == Category::Integer { "is exact integer arithmetic" } else { "bounds float rounding" }
            )));
        }
    }
}

// Rule: in a dtype-generic op every float tensor and parameter is typed by a variable (the
// reference is instantiated once per member, and gradcheck runs every variable at f64).
pub(super) fn check_floats_typed_by_vars(cx: &Ctxt, sig: &SSignature) {
    if sig.vars.is_empty() {
        return;
    }
    let fixed = sig
        .args
        .iter()
        .filter_map(|a| match a {
            SArg::Tensor(t) => Some((&t.name, &t.dtype, &t.var)),
            SArg::Param(p) => Some((&p.name, &p.dtype, &p.var)),
            SArg::Broken(_) => None,
        })
        .chain(sig.outputs.iter().map(|o| (&o.name, &o.dtype, &o.var)));
    for (name, dtype, var) in fixed {
        if var.is_none() && dtype.value.is_float() {
            cx.error(dtype.span.error(format!(
                "`{name}` has the fixed float dtype `{}` in a dtype-generic op; type it with a variable (`{}`), or declare one with that single member (`F: {}`)",
                dtype.value, sig.vars[0].name, dtype.value
            )));
        }
    }
}

/// A selection's variables and members against the declared ones; `what` names the selector.
fn check_selection_members(cx: &Ctxt, sig: &SSignature, sel: &[SDTypeVar], what: &str) {
    for (i, s) in sel.iter().enumerate() {
        let Some(v) = sig.vars.iter().find(|v| v.name == s.name) else {
            let declared: Vec<String> = sig.vars.iter().map(|v| format!("`{}`", v.name)).collect();
            cx.error(syn::Error::new(
                s.name.span(),
                format!(
                    "{what} selects members of `{}`, which is not a declared dtype variable (declared: {})",
                    s.name,
                    declared.join(", ")
                ),
            ));
            continue;
        };
        if sel[..i].iter().any(|t| t.name == s.name) {
            cx.error(syn::Error::new(s.name.span(), format!("`{}` is selected twice; list all its members in one entry", s.name)));
        }
        check_members_listed_once(cx, s);
        if s.members.is_empty() {
            let example = v.members.first().map_or(DType::f32, |m| m.value);
            cx.error(syn::Error::new(
                s.name.span(),
                format!("{what} selects no member of `{}`; list some, e.g. `{}: {example}`", s.name, s.name),
            ));
        }
        for m in &s.members {
            if !v.members.iter().any(|n| n.value == m.value) {
                let set: Vec<String> = v.members.iter().map(|n| n.value.to_string()).collect();
                cx.error(m.span.error(format!(
                    "`{}` is not a member of `{}` ({}); {what} can serve only declared members",
                    m.value,
                    s.name,
                    set.join(" | ")
                )));
            }
        }
    }
}

/// The bindings of `sig`'s variables a selection serves (every binding when `sel` is empty).
pub(super) fn served(sig: &SSignature, sel: &[SDTypeVar]) -> Vec<Vec<DType>> {
    let mut out: Vec<Vec<DType>> = vec![Vec::new()];
    for v in &sig.vars {
        let chosen: Vec<DType> = match sel.iter().find(|s| s.name == v.name) {
            Some(s) => v.members.iter().map(|m| m.value).filter(|d| s.members.iter().any(|m| m.value == *d)).collect(),
            None => v.members.iter().map(|m| m.value).collect(),
        };
        out = out.iter().flat_map(|b| chosen.iter().map(move |d| b.iter().copied().chain([*d]).collect())).collect();
    }
    out
}

/// `sig` at one binding: every variable-typed tensor and parameter at its variable's member.
pub(super) fn instantiate(sig: &SSignature, binding: &[DType]) -> SSignature {
    let mut s = sig.clone();
    let of = |var: &Option<syn::Ident>, d: DType| {
        var.as_ref().and_then(|n| sig.vars.iter().position(|v| &v.name == n)).map_or(d, |i| binding[i])
    };
    for a in &mut s.args {
        match a {
            SArg::Tensor(t) => t.dtype.value = of(&t.var, t.dtype.value),
            SArg::Param(p) => p.dtype.value = of(&p.var, p.dtype.value),
            SArg::Broken(_) => {}
        }
    }
    for o in &mut s.outputs {
        o.dtype.value = of(&o.var, o.dtype.value);
    }
    s
}

/// The error for a `dtypes(...)` selection in an op without dtype variables.
fn selection_without_vars(span: SpanRange, what: &str) -> syn::Error {
    span.error(format!(
        "{what} selects members of dtype variables, but this op declares none; remove `dtypes(...)`, or make the op generic: `signature<T: f32 | f64>(...)`"
    ))
}

/// The instances claimed so far by the kernels of one kind (a language, or `cpu`), each with the
/// kernel that claimed it: a second claim on an instance is refused.
struct Claims<'a> {
    sig: &'a SSignature,
    claimed: Vec<(Vec<DType>, String)>,
}

impl<'a> Claims<'a> {
    fn new(sig: &'a SSignature) -> Self {
        Claims { sig, claimed: Vec::new() }
    }

    /// Claims every instance `sel` serves for `who`; the first instance another kernel already
    /// serves, if any, as (its binding's text, that kernel).
    fn claim(&mut self, sel: &[SDTypeVar], who: String) -> Option<(String, String)> {
        let vars: Vec<_> = self.sig.vars.iter().map(SDTypeVar::to_var).collect();
        for b in served(self.sig, sel) {
            if let Some((_, other)) = self.claimed.iter().find(|(c, _)| *c == b) {
                return Some((binding_text(&vars, &b), other.clone()));
            }
            self.claimed.push((b, who.clone()));
        }
        None
    }
}

// Rule: each `cpu(...)` entry's `dtypes(...)` needs dtype variables and names declared variables
// and members of their sets, each member once; several entries are the point of `dtypes(...)`
// (one kernel per instance), but no two serve the same instance (an op without dtype variables
// has one instance, so one `cpu` kernel).
pub(super) fn check_cpu_kernels(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    check_cpu_set(cx, &attr.cpu, sig, "`cpu` kernel");
}

/// The rule of [`check_cpu_kernels`] for one list of `cpu` kernels computing one op (the
/// forward's, or the VJP op's), named `kind` in messages.
pub(super) fn check_cpu_set(cx: &Ctxt, kernels: &[SCpuKernel], sig: &SSignature, kind: &str) {
    let mut claims = Claims::new(sig);
    for k in kernels {
        let path = path_text(&k.path);
        let what = format!("{kind} `{path}`");
        match &k.dtypes {
            Some((span, _)) if sig.vars.is_empty() => {
                cx.error(selection_without_vars(*span, &what));
                continue;
            }
            Some(_) => check_selection_members(cx, sig, k.selection(), &what),
            None => {}
        }
        if let Some((text, other)) = claims.claim(k.selection(), path) {
            let at = k.dtypes.as_ref().map_or(k.span, |(s, _)| *s);
            cx.error(at.error(if sig.vars.is_empty() {
                format!("{what} and {kind} `{other}` both serve this op, which has no dtype variables and so one instance: an instance has one {kind}; keep one")
            } else {
                format!("{what} and {kind} `{other}` both serve `{text}`: an instance has one {kind}; narrow their `dtypes(...)` so that each instance has at most one")
            }));
        }
    }
}

// Rule: a kernel's `dtypes(...)` selection needs dtype variables and names declared variables
// and members of their sets, each member once; a WGSL kernel serves only members WGSL has a type
// for (no `f64`, no `bf16`); no two kernels of one language serve the same binding. One list of
// kernels computes one op: the forward kernels, or the VJP kernels.
pub(super) fn check_kernel_selections(cx: &Ctxt, kernels: &[SKernel], sig: &SSignature) {
    let (mut wgsl, mut cuda) = (Claims::new(sig), Claims::new(sig));
    for k in kernels {
        let what = format!("kernel `{}`", k.path.value());
        match &k.dtypes {
            Some((span, _)) if sig.vars.is_empty() => {
                cx.error(selection_without_vars(*span, &what));
                continue;
            }
            Some(_) => check_selection_members(cx, sig, k.selection(), &what),
            None if sig.vars.is_empty() => continue,
            None => {}
        }
        let claims = match k.lang {
            KernelLang::Wgsl => {
                check_wgsl_members(cx, k, sig, k.selection());
                &mut wgsl
            }
            KernelLang::Cuda => &mut cuda,
        };
        if let Some((text, other)) = claims.claim(k.selection(), k.path.value()) {
            let at = k.dtypes.as_ref().map_or(SpanRange::single(k.path.span()), |(s, _)| *s);
            cx.error(at.error(format!(
                "{what} and kernel `{other}` both serve `{text}`: an instance has one kernel per language; narrow their `dtypes(...)`"
            )));
        }
    }
}

/// A path as written (`a::b`), for messages.
fn path_text(p: &syn::Path) -> String {
    let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
    format!("{}{}", if p.leading_colon.is_some() { "::" } else { "" }, segs.join("::"))
}

/// A WGSL kernel's members: each must have a WGSL type.
fn check_wgsl_members(cx: &Ctxt, k: &SKernel, sig: &SSignature, sel: &[SDTypeVar]) {
    for v in &sig.vars {
        let chosen = sel.iter().find(|s| s.name == v.name);
        for m in chosen.map_or(&v.members, |s| &s.members) {
            // (A selected non-member is reported as such, not again here.)
            if wgsl_type(m.value).is_some() || !v.members.iter().any(|n| n.value == m.value) {
                continue;
            }
            let why = format!("WGSL has no `{}` type", m.value);
            match chosen {
                Some(_) => cx.error(m.span.error(format!(
                    "WGSL kernel `{}` cannot serve `{} = {}`: {why}; serve it from a CUDA or `cpu` kernel (the reference serves every member)",
                    k.path.value(),
                    v.name,
                    m.value
                ))),
                None => cx.error(syn::Error::new(
                    k.path.span(),
                    format!(
                        "this WGSL kernel serves every member of `{}` (it has no `dtypes(...)`), but `{}` has no WGSL type ({why}); add `dtypes({}: ...)` listing the members it serves",
                        v.name, m.value, v.name
                    ),
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::check::tests::errs;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn generic(sig: TokenStream, rest: TokenStream) -> Vec<String> {
        errs(
            quote!(name = "t/g", version = 1, #sig, category = elementwise, tolerance = ulp(1), backward = none, #rest),
            quote!(
                fn g<T: Real>(x: &[T]) -> Vec<T> {
                    todo!()
                }
            ),
        )
    }

    #[test]
    fn cpu_kernels_serving_disjoint_instances_are_accepted_and_overlapping_ones_refused() {
        let sig = quote!(signature<T: f16 | f32 | f64>(x: T[n]) -> T[n]);
        let e = generic(sig.clone(), quote!(cpu(g32, dtypes(T: f32)), cpu(g64, dtypes(T: f64))));
        assert!(e.is_empty(), "{e:?}");
        let e = generic(sig.clone(), quote!(cpu(g32, dtypes(T: f32 | f16)), cpu(g64, dtypes(T: f64)), cpu(other, dtypes(T: f16))));
        assert_eq!(e, ["`cpu` kernel `other` and `cpu` kernel `g32` both serve `T = f16`: an instance has one `cpu` kernel; narrow their `dtypes(...)` so that each instance has at most one"]);
        // A `cpu = path` serves every member, so any other `cpu` kernel overlaps it.
        let e = generic(sig.clone(), quote!(cpu = all, cpu(g64, dtypes(T: f64))));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("`cpu` kernel `g64` and `cpu` kernel `all` both serve `T = f64`"), "{}", e[0]);
        // Without dtype variables there is one instance, so one `cpu` kernel.
        let e = generic(quote!(signature(x: f32[n]) -> f32[n]), quote!(cpu = a, cpu = b));
        assert_eq!(e, ["`cpu` kernel `b` and `cpu` kernel `a` both serve this op, which has no dtype variables and so one instance: an instance has one `cpu` kernel; keep one"]);
        let e = generic(quote!(signature(x: f32[n]) -> f32[n]), quote!(cpu = a));
        assert!(e.is_empty(), "{e:?}");
    }

    /// Every `cpu` kernel is in the contract, hence in the identity: which function serves
    /// which instance.
    #[test]
    fn each_cpu_kernel_and_what_it_serves_is_in_the_identity() {
        let hash = |cpu: TokenStream| {
            let attr = quote!(name = "t/g", version = 1, signature<T: f32 | f64>(x: T[n]) -> T[n], category = elementwise,
                tolerance = ulp(1), backward = none, #cpu);
            let item = quote!(
                fn g<T: Real>(x: &[T]) -> Vec<T> {
                    todo!()
                }
            );
            crate::check::check_tokens(attr, item, &[]).map(|(c, _)| (c.hash, c.contract)).map_err(|e| e[0].to_string()).unwrap()
        };
        let (a, contract) = hash(quote!(cpu(g32, dtypes(T: f32)), cpu(g64, dtypes(T: f64))));
        let paths: Vec<&str> = contract.cpu_kernels().iter().map(|(p, _)| *p).collect();
        assert_eq!(paths, ["g32", "g64"]);
        assert_eq!(
            (contract.cpu_for(&[crate::contract::DType::f64]), contract.cpu_for(&[crate::contract::DType::f32])),
            (Some("g64"), Some("g32"))
        );
        let (b, _) = hash(quote!(cpu(g32, dtypes(T: f32)), cpu(other64, dtypes(T: f64))));
        let (c, _) = hash(quote!(cpu(g32, dtypes(T: f64)), cpu(g64, dtypes(T: f32))));
        let (d, _) = hash(quote!(cpu(g32, dtypes(T: f32))));
        assert!(a != b && a != c && a != d && b != c && b != d && c != d);
    }

    #[test]
    fn a_member_listed_twice_in_a_selection_is_refused_as_in_the_set() {
        let sig = quote!(signature<T: f16 | f32>(x: T[n]) -> T[n]);
        let e = generic(sig, quote!(cpu(g, dtypes(T: f32 | f32))));
        assert_eq!(e, ["`f32` is listed twice in `T`; list each member once"]);
        let e = generic(quote!(signature<T: f32 | f32>(x: T[n]) -> T[n]), quote!());
        assert_eq!(e, ["`f32` is listed twice in `T`; list each member once"]);
    }

    /// A variable bound only by a scalar parameter can reach only the members a parameter
    /// carries as itself; a tensor input typed by it binds it wherever it is written.
    #[test]
    fn a_variable_bound_only_by_a_scalar_needs_members_a_scalar_carries() {
        let check = |sig: TokenStream| {
            errs(
                quote!(name = "t/s", version = 1, #sig, category = elementwise, tolerance = ulp(1), backward = none),
                quote!(
                    fn s<T: Real>(x: &[u32], s: T) -> Vec<T> {
                        todo!()
                    }
                ),
            )
        };
        let e = check(quote!(signature<T: f16 | f32>(x: u32[n], s: T) -> T[n]));
        assert_eq!(e, ["`T` types no tensor input, only parameter `s`, so a call chooses its member by the parameter's dtype; a parameter of dtype `f16` is passed as `f32`, so no call could choose `T = f16`: type a tensor input with `T` (`x: T[n]`), or drop `f16` from `T`"]);
        assert_eq!(check(quote!(signature<T: bf16 | f16 | f32>(x: u32[n], s: T) -> T[n])).len(), 2);
        assert!(check(quote!(signature<T: f32 | f64>(x: u32[n], s: T) -> T[n])).is_empty());
        let e = errs(
            quote!(name = "t/s", version = 1, signature<T: f16 | f32>(s: T, x: T[n]) -> T[n], category = elementwise,
                tolerance = ulp(1), backward = none),
            quote!(
                fn s<T: Real>(s: T, x: &[T]) -> Vec<T> {
                    todo!()
                }
            ),
        );
        assert!(e.is_empty(), "{e:?}");
    }
}
