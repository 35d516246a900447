//! Code generation only: turns a checked declaration into the user's function plus a hidden
//! module holding the op's static description and the typed call shims. No decisions here:
//! every rule lives in `op_spec::check`; shims call `::op_runtime::__private` helpers.

use op_spec::check::{check, CheckInput, Checked};
use op_spec::contract::{Arg, Backward, DType};
use op_spec::ctxt::Ctxt;
use op_spec::model::{OpAttr, SBackward};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The whole macro: parse, check, expand; on error, the function unchanged plus the errors.
pub fn expand(attr: TokenStream, item: TokenStream, source_dir: Option<std::path::PathBuf>) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let msg = syn::Error::new(
                e.span(),
                "`#[op]` goes on a free function, the op's reference implementation, not on this item; put it on a `fn`",
            );
            let err = msg.to_compile_error();
            return quote!(#item #err);
        }
    };
    let cx = Ctxt::new();
    let parsed = op_spec::parse::parse_attr(&cx, attr);
    let description = op_spec::canon::doc_comment(&func.attrs);
    let mut bases: Vec<std::path::PathBuf> = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from).into_iter().collect();
    bases.extend(source_dir);
    let checked = check(&cx, &CheckInput { attr: &parsed, func: &func, description: &description, base_dirs: &bases });
    match (cx.check(), checked) {
        (Ok(()), Some(c)) => generate(&func, &parsed, &c, &description),
        (Err(errors), _) => fallback(&func, errors),
        (Ok(()), None) => fallback(
            &func,
            vec![syn::Error::new(Span::call_site(), "internal error in #[op]: the declaration did not check but no error was recorded")],
        ),
    }
}

/// The function unchanged, plus every error (tokio-macros style: the IDE keeps the item).
fn fallback(func: &syn::ItemFn, errors: Vec<syn::Error>) -> TokenStream {
    let errs = errors.iter().map(syn::Error::to_compile_error);
    quote!(#func #(#errs)*)
}

fn elem_type(d: DType) -> TokenStream {
    match d {
        DType::f16 => quote!(::op_runtime::__private::f16),
        DType::bf16 => quote!(::op_runtime::__private::bf16),
        other => {
            let id = format_ident!("{}", other.name());
            quote!(#id)
        }
    }
}

/// How the shims instantiate the reference: the declared dtype or f64 (gradcheck).
#[derive(Clone, Copy, PartialEq)]
enum Inst {
    Declared,
    F64,
}

struct Ctx<'a> {
    checked: &'a Checked,
    generic: bool,
}

impl Ctx<'_> {
    /// The element type of a dtype under an instantiation.
    fn ty(&self, d: DType, inst: Inst) -> TokenStream {
        if d.is_float() && self.generic && inst == Inst::F64 {
            quote!(f64)
        } else {
            elem_type(d)
        }
    }

    /// The fn-pointer type of the reference under `inst`, plus `extra` trailing slice params.
    fn ref_fn_type(&self, inst: Inst, extra: &[TokenStream], ret: Option<TokenStream>) -> TokenStream {
        let sig = &self.checked.contract.signature;
        let mut params: Vec<TokenStream> = sig
            .args
            .iter()
            .map(|a| match a {
                Arg::Tensor(t) => {
                    let e = self.ty(t.dtype, inst);
                    quote!(&[#e])
                }
                Arg::Param(p) => self.ty(p.dtype, inst),
            })
            .collect();
        params.extend(self.checked.reference.extra_dims.iter().map(|_| quote!(usize)));
        params.extend(extra.iter().cloned());
        let ret = ret.unwrap_or_else(|| self.outputs_type(inst));
        quote!(fn(#(#params),*) -> #ret)
    }

    fn outputs_type(&self, inst: Inst) -> TokenStream {
        let outs: Vec<TokenStream> = self
            .checked
            .contract
            .signature
            .outputs
            .iter()
            .map(|o| {
                let e = self.ty(o.dtype, inst);
                quote!(::std::vec::Vec<#e>)
            })
            .collect();
        if outs.len() == 1 {
            outs[0].clone()
        } else {
            quote!((#(#outs),*))
        }
    }

    fn grads_type(&self, inst: Inst) -> TokenStream {
        let gs: Vec<TokenStream> = self
            .checked
            .contract
            .signature
            .differentiable_inputs()
            .map(|t| {
                let e = self.ty(t.dtype, inst);
                quote!(::std::vec::Vec<#e>)
            })
            .collect();
        if gs.len() == 1 {
            gs[0].clone()
        } else {
            quote!((#(#gs),*))
        }
    }

    /// Argument expressions reading the call's inputs, params and dims.
    fn call_args(&self, inst: Inst) -> Vec<TokenStream> {
        let sig = &self.checked.contract.signature;
        let (mut ti, mut pi) = (0usize, 0usize);
        let mut args: Vec<TokenStream> = Vec::new();
        for a in &sig.args {
            match a {
                Arg::Tensor(t) => {
                    let e = self.ty(t.dtype, inst);
                    args.push(quote!(__cx.input::<#e>(#ti)?));
                    ti += 1;
                }
                Arg::Param(p) => {
                    let e = self.ty(p.dtype, inst);
                    args.push(quote!(__cx.param::<#e>(#pi)?));
                    pi += 1;
                }
            }
        }
        for d in &self.checked.reference.extra_dims {
            args.push(quote!(__cx.dim(#d)?));
        }
        args
    }

    /// Statements storing a returned value (one Vec or a tuple of Vecs) with `setter`.
    fn store(&self, n: usize, setter: &str) -> TokenStream {
        let setter = format_ident!("{}", setter);
        if n == 1 {
            quote!(__cx.#setter(0, __r)?;)
        } else {
            let idx: Vec<syn::Index> = (0..n).map(syn::Index::from).collect();
            let pos: Vec<usize> = (0..n).collect();
            quote!(#(__cx.#setter(#pos, __r.#idx)?;)*)
        }
    }
}

/// A user path as seen from the generated child module: `self::x` becomes `super::x`,
/// `super::x` becomes `super::super::x`; other paths resolve through `use super::*`.
fn rebase(p: &syn::Path) -> syn::Path {
    let mut p = p.clone();
    if let Some(first) = p.segments.first_mut() {
        if first.ident == "self" {
            first.ident = syn::Ident::new("super", first.ident.span());
            return p;
        }
        if first.ident == "super" {
            let sup: syn::PathSegment = syn::Ident::new("super", first.ident.span()).into();
            p.segments.insert(0, sup);
        }
    }
    p
}

/// `ts` with every token's span set to `span`, so a type error on a generated check points at
/// the user's path alone (not at the whole attribute).
fn respan(ts: TokenStream, span: Span) -> TokenStream {
    ts.into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                ng.set_span(span);
                proc_macro2::TokenTree::Group(ng)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// `let __f: <fn type> = <path>;` with the user's span on the type check but a call-site
/// `__f`, so the binding resolves from the (call-site) shim body even inside `macro_rules!`.
fn typed_binding(span: Span, fty: &TokenStream, path: &TokenStream) -> TokenStream {
    let f = syn::Ident::new("__f", Span::call_site());
    quote_spanned!(span=> let #f: #fty = #path;)
}

fn path_spanned(p: &syn::Path) -> Span {
    p.segments.last().map(|s| s.ident.span()).unwrap_or_else(Span::call_site)
}

fn generate(func: &syn::ItemFn, attr: &OpAttr, checked: &Checked, description: &str) -> TokenStream {
    let c = &checked.contract;
    let fname = &func.sig.ident;
    let vis = &func.vis;
    let cx = Ctx { checked, generic: checked.reference.float_generic.is_some() };
    let has_float = c.signature.args.iter().any(|a| matches!(a, Arg::Tensor(t) if t.dtype.is_float()))
        || c.signature.outputs.iter().any(|o| o.dtype.is_float());
    let declared_is_f64 =
        c.signature.inputs().chain(c.signature.outputs.iter()).filter(|t| t.dtype.is_float()).all(|t| t.dtype == DType::f64);
    let insts: Vec<(Inst, &str)> = if has_float && (cx.generic || declared_is_f64) {
        vec![(Inst::Declared, "declared"), (Inst::F64, "f64")]
    } else {
        vec![(Inst::Declared, "declared")]
    };

    let contract_json = op_spec::canon::contract_json(c);
    let body = op_spec::canon::body_tokens(func);
    let kbytes: Vec<op_spec::canon::KernelBytes<'_>> = checked
        .kernels
        .iter()
        .zip(&c.kernels)
        .map(|(lk, k)| op_spec::canon::KernelBytes {
            path: &k.path,
            bytes: &lk.bytes,
            headers: lk.headers.iter().map(|(p, _, b)| (p.as_str(), b.as_slice())).collect(),
        })
        .collect();
    let hash = op_spec::canon::identity(&contract_json, &body, &kbytes);
    let hash_bytes = hash.iter();

    // Kernel sources enter the build through include_bytes! so editing one rebuilds.
    let kernels = checked.kernels.iter().zip(&c.kernels).map(|(lk, k)| {
        let abs = lk.abs_path.to_string_lossy().to_string();
        let path = &k.path;
        let entry = &lk.info.entry;
        let [x, y, z] = lk.info.workgroup_size;
        let headers = lk.headers.iter().map(|(rel, abs, _)| {
            let abs = abs.to_string_lossy().to_string();
            quote!((#rel, include_bytes!(#abs)))
        });
        quote!(::op_runtime::__private::KernelSource {
            path: #path,
            source: include_bytes!(#abs),
            headers: &[#(#headers),*],
            entry: #entry,
            workgroup_size: [#x, #y, #z],
        })
    });

    // Reference shims: one per instantiation.
    let mut shims = Vec::new();
    let mut ref_fields = Vec::new();
    for (inst, tag) in &insts {
        let shim = format_ident!("__reference_{}", tag);
        let fty = cx.ref_fn_type(*inst, &[], None);
        let args = cx.call_args(*inst);
        let store = cx.store(c.signature.outputs.len(), "set_output");
        let span = fname.span();
        let turbofish = match &checked.reference.float_generic {
            Some(_) => {
                let t = if *inst == Inst::F64 {
                    quote!(f64)
                } else {
                    c.signature
                        .inputs()
                        .chain(c.signature.outputs.iter())
                        .find(|t| t.dtype.is_float())
                        .map(|t| elem_type(t.dtype))
                        .unwrap_or(quote!(f32))
                };
                quote!(::<#t>)
            }
            None => quote!(),
        };
        // The coercion type-checks the reference against the signature (errors land on its
        // name); the call itself is direct so it inlines like a plain call. Only the check
        // carries the user's span: locals stay call-site so the shim is hygienic inside
        // `macro_rules!` expansions too.
        let check = quote_spanned!(span=> let _: #fty = super::#fname;);
        shims.push(quote! {
            fn #shim(__cx: &mut ::op_runtime::__private::Call<'_>) -> ::core::result::Result<(), ::op_runtime::__private::ShimError> {
                #check
                let __r = super::#fname #turbofish (#(#args),*);
                #store
                ::core::result::Result::Ok(())
            }
        });
        ref_fields.push(shim);
    }
    let reference = &ref_fields[0];
    let reference_f64 = match ref_fields.get(1) {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    };

    // The optional fast CPU kernel: same signature as the reference at the declared dtype.
    let cpu = match &attr.cpu {
        Some(p) => {
            let p = &rebase(p);
            let fty = cx.ref_fn_type(Inst::Declared, &[], None);
            let args = cx.call_args(Inst::Declared);
            let store = cx.store(c.signature.outputs.len(), "set_output");
            let span = path_spanned(p);
            let fty = respan(fty, span);
            let check = typed_binding(span, &fty, &quote!(#p));
            shims.push(quote! {
                fn __cpu(__cx: &mut ::op_runtime::__private::Call<'_>) -> ::core::result::Result<(), ::op_runtime::__private::ShimError> {
                    #check
                    let __r = __f(#(#args),*);
                    #store
                    ::core::result::Result::Ok(())
                }
            });
            quote!(::core::option::Option::Some(__cpu))
        }
        None => quote!(::core::option::Option::None),
    };

    // Backward shims: VJP (reference args + one cotangent per output -> one grad per
    // differentiable input) and JVP rules (reference args + one tangent -> one tangent per output).
    let n_out = c.signature.outputs.len();
    let n_diff = c.signature.differentiable_inputs().count();
    let mut vjp_fields = Vec::new();
    let mut jvp_fields: Vec<Vec<syn::Ident>> = Vec::new();
    if let Some(SBackward::Declared { vjp, jvp, .. }) = &attr.backward {
        for (inst, tag) in &insts {
            if let Some(p) = vjp.as_ref().map(rebase) {
                let p = &p;
                let shim = format_ident!("__vjp_{}", tag);
                let cots: Vec<TokenStream> = c
                    .signature
                    .outputs
                    .iter()
                    .map(|o| {
                        let e = cx.ty(o.dtype, *inst);
                        quote!(&[#e])
                    })
                    .collect();
                let fty = cx.ref_fn_type(*inst, &cots, Some(cx.grads_type(*inst)));
                let mut args = cx.call_args(*inst);
                for (k, o) in c.signature.outputs.iter().enumerate() {
                    let e = cx.ty(o.dtype, *inst);
                    args.push(quote!(__cx.cotangent::<#e>(#k)?));
                }
                let store = cx.store(n_diff, "set_grad");
                let span = path_spanned(p);
                let fty = respan(fty, span);
                let check = typed_binding(span, &fty, &quote!(#p));
                shims.push(quote! {
                    fn #shim(__cx: &mut ::op_runtime::__private::Call<'_>) -> ::core::result::Result<(), ::op_runtime::__private::ShimError> {
                        #check
                        let __r = __f(#(#args),*);
                        #store
                        ::core::result::Result::Ok(())
                    }
                });
                vjp_fields.push(shim);
            }
            if let Some((_, rules)) = jvp {
                let mut per = Vec::new();
                for (k, p) in rules.iter().map(rebase).enumerate() {
                    let p = &p;
                    let shim = format_ident!("__jvp_{}_{}", tag, k);
                    let diff: Vec<_> = c.signature.differentiable_inputs().collect();
                    let Some(t) = diff.get(k) else { continue };
                    let e = cx.ty(t.dtype, *inst);
                    let fty = cx.ref_fn_type(*inst, &[quote!(&[#e])], None);
                    let mut args = cx.call_args(*inst);
                    args.push(quote!(__cx.tangent::<#e>()?));
                    let store = cx.store(n_out, "set_output");
                    let span = path_spanned(p);
                    let fty = respan(fty, span);
                    let check = typed_binding(span, &fty, &quote!(#p));
                    shims.push(quote! {
                        fn #shim(__cx: &mut ::op_runtime::__private::Call<'_>) -> ::core::result::Result<(), ::op_runtime::__private::ShimError> {
                            #check
                            let __r = __f(#(#args),*);
                            #store
                            ::core::result::Result::Ok(())
                        }
                    });
                    per.push(shim);
                }
                jvp_fields.push(per);
            }
        }
    }
    let opt = |v: Option<&syn::Ident>| match v {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    };
    let vjp_declared = opt(vjp_fields.first());
    let vjp_f64 = opt(vjp_fields.get(1));
    let jvp_declared = jvp_fields.first().cloned().unwrap_or_default();
    let jvp_f64 = jvp_fields.get(1).cloned().unwrap_or_default();

    let composite = match &attr.backward {
        Some(SBackward::Composite { graph: Some(p), .. }) => {
            let p = &rebase(p);
            let span = path_spanned(p);
            let g = quote_spanned!(span=> { let __g: ::op_runtime::__private::CompositeFn = #p; __g });
            quote!(::core::option::Option::Some(#g))
        }
        _ => quote!(::core::option::Option::None),
    };
    let _ = Backward::None;

    let name_str = fname.to_string();
    quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports, dead_code, clippy::all)]
        #vis mod #fname {
            use super::*;

            /// The op's static description, generated by `#[op]`.
            pub static DECL: ::op_runtime::__private::OpDecl = ::op_runtime::__private::OpDecl {
                rust_name: #name_str,
                contract_json: #contract_json,
                body_tokens: #body,
                hash: [#(#hash_bytes),*],
                description: #description,
                kernels: &[#(#kernels),*],
                reference: #reference,
                reference_f64: #reference_f64,
                cpu: #cpu,
                vjp: #vjp_declared,
                vjp_f64: #vjp_f64,
                jvp: &[#(#jvp_declared),*],
                jvp_f64: &[#(#jvp_f64),*],
                composite: #composite,
            };

            #(#shims)*

            /// Conformance of every kernel of this op on every available backend.
            #[cfg(test)]
            #[test]
            fn __op_conformance() {
                ::op_runtime::__private::conformance_test(&DECL);
            }

            /// Gradcheck of this op's declared backward (with its negative control).
            #[cfg(test)]
            #[test]
            fn __op_gradcheck() {
                ::op_runtime::__private::gradcheck_test(&DECL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// Declarations (without kernels: the test has no kernel files) that check cleanly.
    const SEEDS: [(&str, &str); 3] = [
        (
            r#"name = "a/median", version = 1, signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
               category = selection, tolerance = exact, backward = vjp(self::median_vjp) + jvp(super::median_jvp),
               subgradient = "routed", cpu = fast_median, license = "MIT", visibility = public"#,
            "/// Median.\npub fn median<T: Real>(x: &[T], w: u32) -> Vec<T> { todo!() }",
        ),
        (
            r#"name = "a/matmul", version = 2, signature(a: f32[m, k], b: f32[k, n]) -> (c: f32[m, n], d: f32[m]),
               category = contraction, tolerance = accum(4), backward = composite(graph)"#,
            "fn matmul<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> (Vec<T>, Vec<T>) { todo!() }",
        ),
        (
            r#"name = "a/popcount", version = 1, signature(x: u32[n], s: i64 where s != 0) -> u32[k], output = bounded(n), category = integer,
               tolerance = exact, backward = none"#,
            "fn popcount(x: &[u32], s: i64) -> Vec<u32> { todo!() }",
        ),
    ];

    fn expand_str(attr: TokenStream, item: TokenStream) -> String {
        let (a, i) = (attr.clone(), item.clone());
        match catch_unwind(AssertUnwindSafe(|| expand(a, i, None).to_string())) {
            Ok(s) => s,
            Err(_) => panic!("expand panicked on #[op({attr})] {item}"),
        }
    }

    #[test]
    fn seeds_expand_to_the_function_and_its_description() {
        for (attr, item) in SEEDS {
            let out = expand_str(attr.parse().unwrap(), item.parse().unwrap());
            assert!(out.contains("pub static DECL"), "{out}");
            assert!(!out.contains("compile_error"), "{out}");
        }
    }

    #[test]
    fn every_single_token_drop_keeps_the_function_and_never_panics() {
        for (attr, item) in SEEDS {
            let item_ts: TokenStream = item.parse().unwrap();
            let name = syn::parse2::<syn::ItemFn>(item_ts.clone()).unwrap().sig.ident.to_string();
            let toks: Vec<proc_macro2::TokenTree> = attr.parse::<TokenStream>().unwrap().into_iter().collect();
            for i in 0..toks.len() {
                let mut v = toks.clone();
                v.remove(i);
                let out = expand_str(v.into_iter().collect(), item_ts.clone());
                // The user's function is always emitted, checked or not.
                assert!(out.contains(&format!("fn {name}")), "{out}");
                let mut v = toks.clone();
                if i + 1 < v.len() {
                    v.swap(i, i + 1);
                    expand_str(v.into_iter().collect(), item_ts.clone());
                }
            }
        }
    }

    #[test]
    fn a_non_function_item_is_kept_with_an_error() {
        let out = expand_str(SEEDS[0].0.parse().unwrap(), "pub struct S;".parse().unwrap());
        assert!(out.contains("pub struct S"), "{out}");
        assert!(out.contains("compile_error"), "{out}");
    }
}
