//! Generation for ops with dtype variables: one set of concrete shims per instance (binding of
//! the variables), plus the f64 set gradcheck runs. Each shim instantiates the user's functions
//! at that instance's element types; rustc checks each instantiation (a reference whose bounds
//! do not admit a member fails on that member). Decides nothing: `op_spec::plan` lists the
//! instances and which `cpu` kernel serves each.

use crate::elems::Elems;
use crate::shim::{shim, Invoke};
use crate::tokens::{composite, dtype_tokens, option, path_check, reference_binding, Fields, Shims};
use op_spec::check::Checked;
use op_spec::contract::DType;
use op_spec::plan::{F64Path, ShimPlan};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// One instance's element types.
struct At<'a> {
    c: &'a Checked,
    binding: &'a [DType],
    /// Suffix of the instance's shim names (`m0`, `m1`, ..., `f64`).
    tag: String,
}

impl Elems for At<'_> {
    fn checked(&self) -> &Checked {
        self.c
    }

    fn elem(&self, d: DType, var: Option<&str>) -> TokenStream {
        dtype_tokens(ShimPlan::member_elem(&self.c.contract, d, var, self.binding))
    }
}

impl At<'_> {
    fn name(&self, base: &str) -> syn::Ident {
        format_ident!("{}_{}", base, self.tag)
    }
}

/// A shim calling user path `p` through a binding typed `fty` (rustc infers the path's type
/// parameters from it), the type check spanned on the path.
fn path_shim(name: &syn::Ident, p: &syn::Path, fty: TokenStream, call: &Invoke) -> TokenStream {
    shim(name, quote!(), path_check(p, fty).1, call)
}

/// The reference at the instance, with its type parameters named by turbofish.
fn reference(at: &At<'_>, fname: &syn::Ident) -> TokenStream {
    let fty = at.reference_type();
    let vars = &at.c.contract.signature.dtype_vars;
    let targs: Vec<TokenStream> =
        at.c.reference
            .type_params
            .iter()
            .map(|tp| {
                let i = vars.iter().position(|v| *tp == v.name).unwrap_or(0);
                dtype_tokens(at.binding.get(i).copied().unwrap_or(DType::f32))
            })
            .collect();
    let check = reference_binding(fname, &fty, quote!(::<#(#targs),*>));
    shim(&at.name("__reference"), quote!(), check, &Invoke::reference(at.c))
}

/// The instance's VJP `cpu` kernel shim (the `index`-th instance), if one serves it.
fn vjp_cpu(at: &At<'_>, index: usize, items: &mut Vec<TokenStream>) -> Option<TokenStream> {
    let p = at.c.plan.vjp_cpu_members.get(index)?.as_ref()?;
    let name = at.name("__vjp_cpu");
    items.push(path_shim(&name, p, at.vjp_type(), &Invoke::vjp(at.c)));
    Some(quote!(#name))
}

/// The instance's rules: (VJP shim name, JVP shim names), their items pushed to `items`.
fn rules(at: &At<'_>, items: &mut Vec<TokenStream>) -> (Option<syn::Ident>, Vec<syn::Ident>) {
    let plan = &at.c.plan;
    let sig = &at.c.contract.signature;
    let vjp = plan.vjp.as_ref().map(|p| {
        let name = at.name("__vjp");
        items.push(path_shim(&name, p, at.vjp_type(), &Invoke::vjp(at.c)));
        name
    });
    let mut jvp = Vec::new();
    for (k, (p, t)) in plan.jvp.iter().zip(sig.differentiable_inputs()).enumerate() {
        let name = at.name(&format!("__jvp_{k}"));
        items.push(path_shim(&name, p, at.jvp_type(t), &Invoke::jvp(at.c)));
        jvp.push(name);
    }
    (vjp, jvp)
}

/// An instance's shims as `OpDecl` field values: (reference, cpu, VJP, JVP rules, VJP cpu).
type First = (TokenStream, Option<TokenStream>, Option<TokenStream>, Vec<TokenStream>, Option<TokenStream>);

/// Every shim of an op with dtype variables and the `OpDecl` fields naming them: the legacy
/// fields hold the first instance (and the f64 set), `members` every instance.
pub(crate) fn shims(c: &Checked, fname: &syn::Ident) -> Shims {
    let plan = &c.plan;
    let mut items = Vec::new();
    let mut members = Vec::new();
    // The first instance's (reference, cpu, vjp, jvp), which the legacy fields hold.
    let mut first: Option<First> = None;
    for (i, binding) in plan.members.iter().enumerate() {
        let at = At { c, binding, tag: format!("m{i}") };
        items.push(reference(&at, fname));
        let r = at.name("__reference");
        let cpu = match plan.cpu_members.get(i) {
            Some(Some(p)) => {
                let name = at.name("__cpu");
                items.push(path_shim(&name, p, at.reference_type(), &Invoke::reference(c)));
                Some(quote!(#name))
            }
            _ => None,
        };
        let (vjp, jvp) = rules(&at, &mut items);
        let vjp = vjp.map(|v| quote!(#v));
        let vcpu = vjp_cpu(&at, i, &mut items);
        let (cpu_t, vjp_t, vcpu_t) = (option(cpu.clone()), option(vjp.clone()), option(vcpu.clone()));
        let dtypes = binding.iter().map(|d| {
            let id = format_ident!("{}", d.name());
            quote!(__rt::DType::#id)
        });
        members.push(
            quote!(__rt::DeclMember { dtypes: &[#(#dtypes),*], reference: #r, cpu: #cpu_t, vjp: #vjp_t, jvp: &[#(#jvp),*], vjp_cpu: #vcpu_t }),
        );
        first.get_or_insert((quote!(#r), cpu, vjp, jvp.iter().map(|j| quote!(#j)).collect(), vcpu));
    }
    let mut fields = Fields::default();
    let (first_reference, cpu, vjp, jvp, vcpu) =
        first.unwrap_or_else(|| (quote!(|_| ::core::result::Result::Ok(())), None, None, Vec::new(), None));
    fields.set("reference", first_reference);
    fields.some("cpu", cpu);
    fields.some("vjp", vjp);
    fields.some("vjp_cpu", vcpu);
    fields.list("jvp", &jvp);
    if plan.f64 == F64Path::Member {
        let at = At { c, binding: &plan.f64_binding, tag: "f64".to_string() };
        items.push(reference(&at, fname));
        let r = at.name("__reference");
        let (vjp, jvp) = rules(&at, &mut items);
        fields.some("reference_f64", Some(quote!(#r)));
        fields.some("vjp_f64", vjp.map(|v| quote!(#v)));
        fields.list("jvp_f64", &jvp.iter().map(|j| quote!(#j)).collect::<Vec<_>>());
    }
    fields.some("composite", composite(plan));
    fields.list("members", &members);
    Shims { items, fields }
}
