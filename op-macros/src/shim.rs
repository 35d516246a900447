//! The one shim template, shared by every op: a typed binding `__f` of the user's function (its
//! type check against the signature, spanned on the user's path), then one call into
//! `::op_runtime::__private` that reads each argument from its source and stores the result.
//! The reading and storing are generic code in the runtime (its private `generated` module),
//! compiled once, not per op. Decides nothing: the sources follow the contract's signature.

use op_spec::check::Checked;
use op_spec::contract::Arg;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// Most arguments a shim passes through the runtime's `callN` (it has `call0` to `call12`).
const MAX_CALL_ARGS: usize = 12;
/// Most parts of a result the runtime's `Results` stores (a `Vec` or a tuple of up to 8).
const MAX_RESULTS: usize = 8;

/// Where a shim stores what the function returns.
#[derive(Clone, Copy)]
enum Dest {
    /// The call's outputs (reference, `cpu` kernel, JVP rules).
    Outputs,
    /// The differentiable inputs' gradients (VJP rules).
    Grads,
}

/// What a shim passes and where it stores: the argument sources, how many parts the result has,
/// and where they go.
pub(crate) struct Invoke {
    srcs: Vec<TokenStream>,
    n_results: usize,
    dest: Dest,
}

/// `__rt::Src::<variant>(<arg>)` (`__rt` is the generated module's alias of
/// `::op_runtime::__private`).
fn src(variant: &str, arg: Option<TokenStream>) -> TokenStream {
    let v = format_ident!("{}", variant);
    match arg {
        Some(a) => quote!(__rt::Src::#v(#a)),
        None => quote!(__rt::Src::#v),
    }
}

impl Invoke {
    /// The reference's arguments, its result stored as the outputs (also a `cpu` kernel's).
    pub(crate) fn reference(c: &Checked) -> Invoke {
        Invoke { srcs: reference_srcs(c), n_results: c.contract.signature.outputs.len(), dest: Dest::Outputs }
    }

    /// A VJP rule's arguments, its result stored as the differentiable inputs' gradients.
    pub(crate) fn vjp(c: &Checked) -> Invoke {
        Invoke { srcs: vjp_srcs(c), n_results: c.contract.signature.differentiable_inputs().count(), dest: Dest::Grads }
    }

    /// A JVP rule's arguments, its result stored as the outputs' tangents.
    pub(crate) fn jvp(c: &Checked) -> Invoke {
        Invoke { srcs: jvp_srcs(c), n_results: c.contract.signature.outputs.len(), dest: Dest::Outputs }
    }
}

/// The sources of the reference's parameters: the signature's tensors and parameters in order,
/// then the `usize` dims the reference names.
fn reference_srcs(c: &Checked) -> Vec<TokenStream> {
    let (mut ti, mut pi) = (0usize, 0usize);
    let mut srcs = Vec::new();
    for a in &c.contract.signature.args {
        match a {
            Arg::Tensor(_) => {
                srcs.push(src("Input", Some(quote!(#ti))));
                ti += 1;
            }
            Arg::Param(_) => {
                srcs.push(src("Param", Some(quote!(#pi))));
                pi += 1;
            }
        }
    }
    srcs.extend(c.reference.extra_dims.iter().map(|d| src("Dim", Some(quote!(#d)))));
    srcs
}

/// A VJP rule's sources: the reference's, then one cotangent per output.
fn vjp_srcs(c: &Checked) -> Vec<TokenStream> {
    let mut srcs = reference_srcs(c);
    srcs.extend((0..c.contract.signature.outputs.len()).map(|k| src("Cotangent", Some(quote!(#k)))));
    srcs
}

/// A JVP rule's sources: the reference's, then the tangent.
fn jvp_srcs(c: &Checked) -> Vec<TokenStream> {
    let mut srcs = reference_srcs(c);
    srcs.push(src("Tangent", None));
    srcs
}

/// The body after the binding `__f`: one `callN` where the runtime has it, else each argument
/// read and each result part stored by the shim itself.
fn invoke(i: &Invoke) -> TokenStream {
    let Invoke { srcs, n_results, dest } = i;
    let (n_results, dest) = (*n_results, *dest);
    let rt = quote!(__rt);
    if srcs.len() <= MAX_CALL_ARGS && n_results <= MAX_RESULTS {
        let call = format_ident!("call{}", srcs.len());
        let dest = match dest {
            Dest::Outputs => quote!(#rt::Dest::Outputs),
            Dest::Grads => quote!(#rt::Dest::Grads),
        };
        return quote!(#rt::#call(__cx, &[#(#srcs),*], #dest, __f));
    }
    let setter = match dest {
        Dest::Outputs => format_ident!("set_output"),
        Dest::Grads => format_ident!("set_grad"),
    };
    let store = if n_results == 1 {
        quote!(__cx.#setter(0, __r)?;)
    } else {
        let idx = (0..n_results).map(syn::Index::from);
        let pos = 0..n_results;
        quote!(#(__cx.#setter(#pos, __r.#idx)?;)*)
    };
    quote! {
        let __r = __f(#(#rt::arg(__cx, #srcs)?),*);
        #store
        ::core::result::Result::Ok(())
    }
}

/// A shim `name` with `generics`: `check` binds `__f` (typed, so a mismatch is an error on the
/// user's path), then the call reads the sources and stores the result as `call` says.
pub(crate) fn shim(name: &syn::Ident, generics: TokenStream, check: TokenStream, call: &Invoke) -> TokenStream {
    let body = invoke(call);
    quote! {
        fn #name #generics (__cx: &mut __rt::Call<'_>) -> __rt::ShimResult {
            #check
            #body
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn srcs(n: usize) -> Vec<TokenStream> {
        (0..n).map(|i| src("Param", Some(quote!(#i)))).collect()
    }

    #[test]
    fn up_to_twelve_arguments_and_eight_results_go_through_one_call_and_more_are_read_one_by_one() {
        let body = |n: usize, r: usize| invoke(&Invoke { srcs: srcs(n), n_results: r, dest: Dest::Outputs }).to_string();
        assert!(body(0, 1).contains("call0"), "{}", body(0, 1));
        assert!(body(12, 8).contains("call12"), "{}", body(12, 8));
        for (n, r) in [(13, 1), (12, 9)] {
            let b = body(n, r);
            assert!(!b.contains("call") && b.matches("arg").count() == n && b.matches("set_output").count() == r, "{b}");
        }
        assert!(invoke(&Invoke { srcs: srcs(2), n_results: 9, dest: Dest::Grads }).to_string().matches("set_grad").count() == 9);
    }
}
