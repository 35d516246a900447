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
        for (j, m) in v.members.iter().enumerate() {
            if v.members[..j].iter().any(|n| n.value == m.value) {
                cx.error(m.span.error(format!("`{}` is listed twice in `{name}`; list each member once", m.value)));
            }
        }
        instances = instances.saturating_mul(v.members.len().max(1));
    }
    if instances > MAX_INSTANCES {
        let last = sig.vars.last().map_or(sig.span, |v| v.span);
        cx.error(last.error(format!(
            "the dtype variables span {instances} instances (every combination of members); at most {MAX_INSTANCES} are allowed: split the op or narrow the sets"
        )));
    }
}

// Rule: every dtype variable types a tensor input or a parameter: a call binds the variable from
// its inputs (a variable typing only outputs could not be chosen).
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

// Rule: a `dtypes(...)` selection (of a kernel or of `cpu(...)`) needs dtype variables and names
// declared variables and members of their sets; a WGSL kernel serves only members WGSL has a
// type for (no `f64`, no `bf16`); no two kernels of one language serve the same binding.
pub(super) fn check_selections(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let none_declared = |span: SpanRange, what: &str| {
        cx.error(span.error(format!(
            "{what} selects members of dtype variables, but this op declares none; remove `dtypes(...)`, or make the op generic: `signature<T: f32 | f64>(...)`"
        )))
    };
    if let Some(first) = attr.cpu_dtypes.first() {
        let what = "`cpu(...)`";
        if sig.vars.is_empty() {
            none_declared(first.span, what);
        } else {
            check_selection_members(cx, sig, &attr.cpu_dtypes, what);
        }
    }
    let mut claimed: Vec<(KernelLang, Vec<DType>, String)> = Vec::new();
    for k in &attr.kernels {
        let sel = k.dtypes.as_ref().map(|(_, s)| s.as_slice()).unwrap_or_default();
        let what = format!("kernel `{}`", k.path.value());
        match &k.dtypes {
            Some((span, _)) if sig.vars.is_empty() => {
                none_declared(*span, &what);
                continue;
            }
            Some(_) => check_selection_members(cx, sig, sel, &what),
            None if sig.vars.is_empty() => continue,
            None => {}
        }
        if k.lang == KernelLang::Wgsl {
            check_wgsl_members(cx, k, sig, sel);
        }
        for b in served(sig, sel) {
            let text = binding_text(&sig.vars.iter().map(SDTypeVar::to_var).collect::<Vec<_>>(), &b);
            if let Some((_, _, other)) = claimed.iter().find(|(l, c, _)| *l == k.lang && *c == b) {
                let at = k.dtypes.as_ref().map_or(SpanRange::single(k.path.span()), |(s, _)| *s);
                cx.error(at.error(format!(
                    "{what} and kernel `{other}` both serve `{text}`: an instance has one kernel per language; narrow their `dtypes(...)`"
                )));
                break;
            }
            claimed.push((k.lang, b, k.path.value()));
        }
    }
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
