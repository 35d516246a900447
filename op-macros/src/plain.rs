//! Generation for ops without dtype variables: the reference, `cpu`, VJP and JVP shims, generic
//! over the plan's `T` (and then also named at `f64`, for gradcheck) or concrete at the declared
//! dtypes. Decides nothing: `op_spec::plan` says which.

use crate::elems::Elems;
use crate::shim::{shim, Invoke};
use crate::tokens::{composite, dtype_tokens, path_check, reference_binding, respan_ident, Fields, Shims};
use op_spec::check::Checked;
use op_spec::contract::DType;
use op_spec::plan::{Elem, F64Path};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

/// Whether a shim is generic over the plan's `T` or concrete at the declared dtypes.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Generic,
    Concrete,
}

/// Generation context of one declaration's shims in one mode.
struct Gen<'a> {
    c: &'a Checked,
    mode: Mode,
}

impl Elems for Gen<'_> {
    fn checked(&self) -> &Checked {
        self.c
    }

    fn elem(&self, d: DType, _var: Option<&str>) -> TokenStream {
        match (self.c.plan.elem(d), self.mode) {
            (Elem::T, Mode::Generic) => quote!(T),
            _ => dtype_tokens(d),
        }
    }
}

impl<'a> Gen<'a> {
    /// The declaration's own mode: generic where the plan is.
    fn new(c: &'a Checked) -> Gen<'a> {
        Gen { c, mode: if c.plan.generic { Mode::Generic } else { Mode::Concrete } }
    }

    /// The same declaration at its declared dtypes (a `cpu` kernel's).
    fn concrete(&self) -> Gen<'a> {
        Gen { c: self.c, mode: Mode::Concrete }
    }

    fn generics(&self) -> TokenStream {
        match (self.mode, self.c.plan.float_params) {
            (Mode::Concrete, _) => quote!(),
            (Mode::Generic, false) => quote!(<T: __rt::Real>),
            (Mode::Generic, true) => quote!(<T: __rt::Real + __rt::ParamValue>),
        }
    }

    /// A shim `name` from the one template, generic over `T` (declared at `t_span`, where rustc
    /// points when it names `T`) in generic mode.
    fn shim(&self, name: &syn::Ident, t_span: Span, check: TokenStream, call: &Invoke) -> TokenStream {
        shim(name, respan_ident(self.generics(), "T", t_span), check, call)
    }

    /// A shim calling user path `p` through a binding typed `fty`, the type check spanned on
    /// the path so an error lands there (once: a generic shim is checked once).
    fn path_shim(&self, name: &syn::Ident, p: &syn::Path, fty: TokenStream, call: &Invoke) -> TokenStream {
        let (span, check) = path_check(p, fty);
        self.shim(name, span, check, call)
    }

    /// Shim `name` on the declared path.
    fn declared(&self, name: &syn::Ident) -> TokenStream {
        match self.c.plan.declared {
            Some(d) if self.c.plan.generic => {
                let t = dtype_tokens(d);
                quote!(#name::<#t>)
            }
            _ => quote!(#name),
        }
    }

    /// Shim `name` on the f64 path, if there is one.
    fn f64(&self, name: &syn::Ident) -> Option<TokenStream> {
        match self.c.plan.f64 {
            F64Path::None | F64Path::Member => None,
            F64Path::Generic => Some(quote!(#name::<f64>)),
            F64Path::Declared => Some(quote!(#name)),
        }
    }
}

/// The reference shim, its binding checked against the reference (an alias element type is
/// caught here, on the function's name).
fn reference_shim(g: &Gen<'_>, fname: &syn::Ident) -> TokenStream {
    let check = reference_binding(fname, &g.reference_type(), quote!());
    g.shim(&format_ident!("__reference"), fname.span(), check, &Invoke::reference(g.c))
}

/// Every shim of an op without dtype variables and the `OpDecl` fields naming them.
pub(crate) fn shims(c: &Checked, fname: &syn::Ident) -> Shims {
    let g = Gen::new(c);
    let plan = &c.plan;
    let sig = &c.contract.signature;
    let mut items = vec![reference_shim(&g, fname)];
    let reference_name = format_ident!("__reference");
    let mut fields = Fields::default();
    fields.set("reference", g.declared(&reference_name));
    fields.some("reference_f64", g.f64(&reference_name));
    // The fast CPU kernel: the reference's signature at the declared dtype.
    if let Some(p) = &plan.cpu {
        let name = format_ident!("__cpu");
        let concrete = g.concrete();
        items.push(concrete.path_shim(&name, p, concrete.reference_type(), &Invoke::reference(c)));
        fields.some("cpu", Some(quote!(#name)));
    }
    // VJP: reference args + one cotangent per output -> one gradient per differentiable input.
    if let Some(p) = &plan.vjp {
        let name = format_ident!("__vjp");
        items.push(g.path_shim(&name, p, g.vjp_type(), &Invoke::vjp(c)));
        fields.some("vjp", Some(g.declared(&name)));
        fields.some("vjp_f64", g.f64(&name));
    }
    // The VJP's `cpu` kernel: the rule's signature at the declared dtype.
    if let Some(p) = &plan.vjp_cpu {
        let name = format_ident!("__vjp_cpu");
        let concrete = g.concrete();
        items.push(concrete.path_shim(&name, p, concrete.vjp_type(), &Invoke::vjp(c)));
        fields.some("vjp_cpu", Some(quote!(#name)));
    }
    // JVP rules: reference args + the tangent of differentiable input k -> output tangents.
    let (mut jvp, mut jvp_f64) = (Vec::new(), Vec::new());
    for (k, (p, t)) in plan.jvp.iter().zip(sig.differentiable_inputs()).enumerate() {
        let name = format_ident!("__jvp_{}", k);
        items.push(g.path_shim(&name, p, g.jvp_type(t), &Invoke::jvp(c)));
        jvp.push(g.declared(&name));
        jvp_f64.extend(g.f64(&name));
    }
    fields.list("jvp", &jvp);
    fields.list("jvp_f64", &jvp_f64);
    fields.some("composite", composite(plan));
    Shims { items, fields }
}
