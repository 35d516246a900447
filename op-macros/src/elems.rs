//! The element types of one set of shims: the one trait both generation contexts implement
//! (an op's plain shims, generic over `T` or concrete at the declared dtypes, and one instance of
//! an op with dtype variables), with the function types every shim is checked against derived
//! from it once.

use op_spec::check::Checked;
use op_spec::contract::{Arg, DType, TensorSig};
use proc_macro2::TokenStream;
use quote::quote;

/// How one set of shims names element types, and the shims' function types built on it.
pub(crate) trait Elems {
    /// The checked declaration.
    fn checked(&self) -> &Checked;

    /// The element type of a tensor or parameter of dtype `d` (typed by variable `var`, if any).
    fn elem(&self, d: DType, var: Option<&str>) -> TokenStream;

    /// The reference's parameter types, plus `extra` trailing ones, returning `ret`.
    fn fn_type(&self, extra: &[TokenStream], ret: TokenStream) -> TokenStream {
        let c = self.checked();
        let mut params: Vec<TokenStream> = c
            .contract
            .signature
            .args
            .iter()
            .map(|a| match a {
                Arg::Tensor(t) => {
                    let e = self.elem(t.dtype, t.var.as_deref());
                    quote!(&[#e])
                }
                Arg::Param(p) => self.elem(p.dtype, p.var.as_deref()),
            })
            .collect();
        params.extend(c.reference.extra_dims.iter().map(|_| quote!(usize)));
        params.extend(extra.iter().cloned());
        quote!(fn(#(#params),*) -> #ret)
    }

    /// `Vec<E>` per item, a tuple of them for several.
    fn vecs<'v>(&self, items: impl Iterator<Item = (DType, Option<&'v str>)>) -> TokenStream {
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

    /// What the reference returns: its outputs' `Vec`s.
    fn outputs_type(&self) -> TokenStream {
        self.vecs(self.checked().contract.signature.outputs.iter().map(|o| (o.dtype, o.var.as_deref())))
    }

    /// The reference's (and a `cpu` kernel's) type.
    fn reference_type(&self) -> TokenStream {
        self.fn_type(&[], self.outputs_type())
    }

    /// A VJP rule's type: the reference's parameters, then one cotangent per output; one
    /// gradient per differentiable input.
    fn vjp_type(&self) -> TokenStream {
        let sig = &self.checked().contract.signature;
        let cots: Vec<TokenStream> = sig
            .outputs
            .iter()
            .map(|o| {
                let e = self.elem(o.dtype, o.var.as_deref());
                quote!(&[#e])
            })
            .collect();
        self.fn_type(&cots, self.vecs(sig.differentiable_inputs().map(|t| (t.dtype, t.var.as_deref()))))
    }

    /// The type of the JVP rule of differentiable input `t`: the reference's parameters, then
    /// `t`'s tangent; the outputs' tangents.
    fn jvp_type(&self, t: &TensorSig) -> TokenStream {
        let e = self.elem(t.dtype, t.var.as_deref());
        self.fn_type(&[quote!(&[#e])], self.outputs_type())
    }
}
