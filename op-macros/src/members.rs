//! Generation for ops with dtype variables: one set of concrete shims per instance (binding of
//! the variables), plus the f64 set gradcheck runs. Each shim instantiates the user's functions
//! at that instance's element types; rustc checks each instantiation (a reference whose bounds
//! do not admit a member fails on that member). Decides nothing: `op_spec::plan` lists the
//! instances and which the `cpu` kernel serves.

use crate::expand::{dtype_tokens, option, path_span, rebase, respan, typed_binding, Shims};
use op_spec::check::Checked;
use op_spec::contract::{Arg, DType};
use op_spec::plan::{F64Path, ShimPlan};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

/// One instance's element types.
struct At<'a> {
    c: &'a Checked,
    binding: &'a [DType],
    /// Suffix of the instance's shim names (`m0`, `m1`, ..., `f64`).
    tag: String,
}

impl At<'_> {
    fn elem(&self, d: DType, var: &Option<String>) -> TokenStream {
        dtype_tokens(ShimPlan::member_elem(&self.c.contract, d, var.as_deref(), self.binding))
    }

    /// The reference's parameter types, plus `extra` trailing ones.
    fn fn_type(&self, extra: &[TokenStream], ret: TokenStream) -> TokenStream {
        let mut params: Vec<TokenStream> = self
            .c
            .contract
            .signature
            .args
            .iter()
            .map(|a| match a {
                Arg::Tensor(t) => {
                    let e = self.elem(t.dtype, &t.var);
                    quote!(&[#e])
                }
                Arg::Param(p) => self.elem(p.dtype, &p.var),
            })
            .collect();
        params.extend(self.c.reference.extra_dims.iter().map(|_| quote!(usize)));
        params.extend(extra.iter().cloned());
        quote!(fn(#(#params),*) -> #ret)
    }

    fn vecs<'b>(&self, items: impl Iterator<Item = (DType, &'b Option<String>)>) -> TokenStream {
        let vs: Vec<TokenStream> = items
            .map(|(d, v)| {
                let e = self.elem(d, v);
                quote!(::std::vec::Vec<#e>)
            })
            .collect();
        if vs.len() == 1 {
            vs[0].clone()
        } else {
            quote!((#(#vs),*))
        }
    }

    fn outputs_type(&self) -> TokenStream {
        self.vecs(self.c.contract.signature.outputs.iter().map(|o| (o.dtype, &o.var)))
    }

    fn call_args(&self) -> Vec<TokenStream> {
        let (mut ti, mut pi) = (0usize, 0usize);
        let mut args = Vec::new();
        for a in &self.c.contract.signature.args {
            match a {
                Arg::Tensor(t) => {
                    let e = self.elem(t.dtype, &t.var);
                    args.push(quote!(__cx.input::<#e>(#ti)?));
                    ti += 1;
                }
                Arg::Param(p) => {
                    let e = self.elem(p.dtype, &p.var);
                    args.push(quote!(__cx.param::<#e>(#pi)?));
                    pi += 1;
                }
            }
        }
        for d in &self.c.reference.extra_dims {
            args.push(quote!(__cx.dim(#d)?));
        }
        args
    }

    fn name(&self, base: &str) -> syn::Ident {
        format_ident!("{}_{}", base, self.tag)
    }
}

fn store(n: usize, setter: &str) -> TokenStream {
    let setter = format_ident!("{}", setter);
    if n == 1 {
        quote!(__cx.#setter(0, __r)?;)
    } else {
        let idx: Vec<syn::Index> = (0..n).map(syn::Index::from).collect();
        let pos: Vec<usize> = (0..n).collect();
        quote!(#(__cx.#setter(#pos, __r.#idx)?;)*)
    }
}

fn shim(name: &syn::Ident, check: TokenStream, call: TokenStream, store: TokenStream) -> TokenStream {
    quote! {
        fn #name(__cx: &mut ::op_runtime::__private::Call<'_>) -> ::core::result::Result<(), ::op_runtime::__private::ShimError> {
            #check
            let __r = #call;
            #store
            ::core::result::Result::Ok(())
        }
    }
}

/// A shim calling user path `p` through a binding typed `fty` (rustc infers the path's type
/// parameters from it), the type check spanned on the path.
fn path_shim(name: &syn::Ident, p: &syn::Path, fty: TokenStream, args: Vec<TokenStream>, store: TokenStream) -> TokenStream {
    let p = rebase(p);
    let span = path_span(&p);
    let check = typed_binding(span, &respan(fty, span), &quote!(#p));
    shim(name, check, quote!(__f(#(#args),*)), store)
}

/// The reference at the instance, with its type parameters named by turbofish.
fn reference(at: &At<'_>, fname: &syn::Ident) -> TokenStream {
    let fty = at.fn_type(&[], at.outputs_type());
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
    let check = quote_spanned!(fname.span()=> let _: #fty = super::#fname::<#(#targs),*>;);
    let args = at.call_args();
    let call = quote!(super::#fname::<#(#targs),*>(#(#args),*));
    shim(&at.name("__reference"), check, call, store(at.c.contract.signature.outputs.len(), "set_output"))
}

/// The instance's rules: (VJP shim name, JVP shim names), their items pushed to `items`.
fn rules(at: &At<'_>, items: &mut Vec<TokenStream>) -> (Option<syn::Ident>, Vec<syn::Ident>) {
    let plan = &at.c.plan;
    let sig = &at.c.contract.signature;
    let vjp = plan.vjp.as_ref().map(|p| {
        let name = at.name("__vjp");
        let cots: Vec<TokenStream> = sig.outputs.iter().map(|o| at.elem(o.dtype, &o.var)).map(|e| quote!(&[#e])).collect();
        let fty = at.fn_type(&cots, at.vecs(sig.differentiable_inputs().map(|t| (t.dtype, &t.var))));
        let mut args = at.call_args();
        for (k, o) in sig.outputs.iter().enumerate() {
            let e = at.elem(o.dtype, &o.var);
            args.push(quote!(__cx.cotangent::<#e>(#k)?));
        }
        items.push(path_shim(&name, p, fty, args, store(sig.differentiable_inputs().count(), "set_grad")));
        name
    });
    let mut jvp = Vec::new();
    for (k, (p, t)) in plan.jvp.iter().zip(sig.differentiable_inputs()).enumerate() {
        let name = at.name(&format!("__jvp_{k}"));
        let e = at.elem(t.dtype, &t.var);
        let fty = at.fn_type(&[quote!(&[#e])], at.outputs_type());
        let mut args = at.call_args();
        args.push(quote!(__cx.tangent::<#e>()?));
        items.push(path_shim(&name, p, fty, args, store(sig.outputs.len(), "set_output")));
        jvp.push(name);
    }
    (vjp, jvp)
}

/// Every shim of an op with dtype variables and the `OpDecl` fields naming them: the legacy
/// fields hold the first instance (and the f64 set), `members` every instance.
pub(crate) fn shims(c: &Checked, fname: &syn::Ident) -> Shims {
    let plan = &c.plan;
    let mut items = Vec::new();
    let mut members = Vec::new();
    let mut first: Option<(TokenStream, TokenStream, TokenStream, Vec<syn::Ident>)> = None;
    for (i, binding) in plan.members.iter().enumerate() {
        let at = At { c, binding, tag: format!("m{i}") };
        items.push(reference(&at, fname));
        let r = at.name("__reference");
        let cpu = match (&plan.cpu, plan.cpu_members.get(i)) {
            (Some(p), Some(true)) => {
                let name = at.name("__cpu");
                let n_out = c.contract.signature.outputs.len();
                items.push(path_shim(&name, p, at.fn_type(&[], at.outputs_type()), at.call_args(), store(n_out, "set_output")));
                Some(quote!(#name))
            }
            _ => None,
        };
        let (vjp, jvp) = rules(&at, &mut items);
        let (cpu_t, vjp_t) = (option(cpu), option(vjp.map(|v| quote!(#v))));
        let dtypes = binding.iter().map(|d| {
            let id = format_ident!("{}", d.name());
            quote!(::op_runtime::__private::DType::#id)
        });
        members.push(quote!(::op_runtime::__private::DeclMember { dtypes: &[#(#dtypes),*], reference: #r, cpu: #cpu_t, vjp: #vjp_t, jvp: &[#(#jvp),*] }));
        first.get_or_insert((quote!(#r), cpu_t, vjp_t, jvp));
    }
    let (reference_f64, vjp_f64, jvp_f64) = if plan.f64 == F64Path::Member {
        let at = At { c, binding: &plan.f64_binding, tag: "f64".to_string() };
        items.push(reference(&at, fname));
        let r = at.name("__reference");
        let (vjp, jvp) = rules(&at, &mut items);
        (option(Some(quote!(#r))), option(vjp.map(|v| quote!(#v))), jvp)
    } else {
        (option(None), option(None), Vec::new())
    };
    let none = || option(None);
    let (reference, cpu, vjp, jvp) = first.unwrap_or_else(|| (quote!(|_| ::core::result::Result::Ok(())), none(), none(), Vec::new()));
    let composite = plan.composite.as_ref().map(|p| {
        let p = rebase(p);
        let span = path_span(&p);
        quote_spanned!(span=> { let __g: ::op_runtime::__private::CompositeFn = #p; __g })
    });
    let composite = option(composite);
    let fields = quote! {
        reference: #reference,
        reference_f64: #reference_f64,
        cpu: #cpu,
        vjp: #vjp,
        vjp_f64: #vjp_f64,
        jvp: &[#(#jvp),*],
        jvp_f64: &[#(#jvp_f64),*],
        composite: #composite,
        members: &[#(#members),*],
    };
    Shims { items, fields }
}
