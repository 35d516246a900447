//! Code generation only: turns a checked declaration into the user's function plus a hidden
//! module holding the op's static description and the typed call shims. Nothing is decided
//! here: `op_spec::check` validates and `op_spec::plan` decides how each shim instantiates the
//! user's functions; every shim comes from one template (`Gen::shim`) and calls
//! `::op_runtime::__private` helpers.

use op_spec::check::{check_declaration, parse_item, Checked, Location};
use op_spec::contract::{Arg, DType};
use op_spec::plan::{Elem, F64Path};
use op_spec::reference::RefFn;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The whole macro (thiserror's shape): the item as the reference function, the declaration
/// checked into the validated model, then generation; on error, the function unchanged plus
/// every error.
pub fn expand(attr: TokenStream, item: TokenStream, source_dir: Option<std::path::PathBuf>, location: Option<Location>) -> TokenStream {
    let func = match parse_item(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let err = e.to_compile_error();
            return quote!(#item #err);
        }
    };
    let mut bases: Vec<std::path::PathBuf> = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from).into_iter().collect();
    bases.extend(source_dir);
    // The declaring crate's own sources feed the identity's code closure.
    let site = op_spec::closure::Site::from_env(location.as_ref().map(|l| l.file.clone()));
    match check_declaration(attr, &func, &bases, location.as_ref(), Some(&site)) {
        Ok(checked) => generate(&func, &checked),
        Err(errors) => fallback(&func, errors),
    }
}

/// The function unchanged, plus every error (tokio-macros style: the IDE keeps the item).
fn fallback(func: &RefFn, errors: Vec<syn::Error>) -> TokenStream {
    let errs = errors.iter().map(syn::Error::to_compile_error);
    quote!(#func #(#errs)*)
}

pub(crate) fn dtype_tokens(d: DType) -> TokenStream {
    match d {
        DType::f16 => quote!(::op_runtime::__private::f16),
        DType::bf16 => quote!(::op_runtime::__private::bf16),
        other => {
            let id = format_ident!("{}", other.name());
            quote!(#id)
        }
    }
}

/// Whether a shim is generic over the plan's `T` or concrete at the declared dtypes.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Generic,
    Concrete,
}

/// Generation context of one declaration.
struct Gen<'a> {
    c: &'a Checked,
}

impl Gen<'_> {
    fn elem(&self, d: DType, mode: Mode) -> TokenStream {
        match (self.c.plan.elem(d), mode) {
            (Elem::T, Mode::Generic) => quote!(T),
            _ => dtype_tokens(d),
        }
    }

    fn mode(&self) -> Mode {
        if self.c.plan.generic {
            Mode::Generic
        } else {
            Mode::Concrete
        }
    }

    fn generics(&self, mode: Mode) -> TokenStream {
        match (mode, self.c.plan.float_params) {
            (Mode::Concrete, _) => quote!(),
            (Mode::Generic, false) => quote!(<T: ::op_runtime::__private::Real>),
            (Mode::Generic, true) => quote!(<T: ::op_runtime::__private::Real + ::op_runtime::__private::ParamValue>),
        }
    }

    /// The reference's parameter types, plus `extra` trailing ones.
    fn fn_type(&self, mode: Mode, extra: &[TokenStream], ret: TokenStream) -> TokenStream {
        let sig = &self.c.contract.signature;
        let mut params: Vec<TokenStream> = sig
            .args
            .iter()
            .map(|a| match a {
                Arg::Tensor(t) => {
                    let e = self.elem(t.dtype, mode);
                    quote!(&[#e])
                }
                Arg::Param(p) => self.elem(p.dtype, mode),
            })
            .collect();
        params.extend(self.c.reference.extra_dims.iter().map(|_| quote!(usize)));
        params.extend(extra.iter().cloned());
        quote!(fn(#(#params),*) -> #ret)
    }

    /// `Vec<E>` per item, a tuple of them for several.
    fn vecs(&self, mode: Mode, dtypes: impl Iterator<Item = DType>) -> TokenStream {
        let vs: Vec<TokenStream> = dtypes
            .map(|d| {
                let e = self.elem(d, mode);
                quote!(::std::vec::Vec<#e>)
            })
            .collect();
        if vs.len() == 1 {
            vs[0].clone()
        } else {
            quote!((#(#vs),*))
        }
    }

    fn outputs_type(&self, mode: Mode) -> TokenStream {
        self.vecs(mode, self.c.contract.signature.outputs.iter().map(|o| o.dtype))
    }

    /// Argument expressions reading the call's inputs, params and dims.
    fn call_args(&self, mode: Mode) -> Vec<TokenStream> {
        let sig = &self.c.contract.signature;
        let (mut ti, mut pi) = (0usize, 0usize);
        let mut args: Vec<TokenStream> = Vec::new();
        for a in &sig.args {
            match a {
                Arg::Tensor(t) => {
                    let e = self.elem(t.dtype, mode);
                    args.push(quote!(__cx.input::<#e>(#ti)?));
                    ti += 1;
                }
                Arg::Param(p) => {
                    let e = self.elem(p.dtype, mode);
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

    /// The one shim template: type-check the user's function (`check`), call it, store. A
    /// generic shim declares `T` at `t_span` (where rustc points when it names `T`).
    fn shim(&self, name: &syn::Ident, mode: Mode, t_span: Span, check: TokenStream, call: TokenStream, store: TokenStream) -> TokenStream {
        let generics = respan_ident(self.generics(mode), "T", t_span);
        quote! {
            fn #name #generics (__cx: &mut ::op_runtime::__private::Call<'_>) -> ::core::result::Result<(), ::op_runtime::__private::ShimError> {
                #check
                let __r = #call;
                #store
                ::core::result::Result::Ok(())
            }
        }
    }

    /// A shim calling user path `p` through a binding typed `fty`, the type check spanned on
    /// the path so an error lands there (once: a generic shim is checked once).
    fn path_shim(
        &self,
        name: &syn::Ident,
        mode: Mode,
        p: &syn::Path,
        fty: TokenStream,
        args: Vec<TokenStream>,
        store: TokenStream,
    ) -> TokenStream {
        let p = rebase(p);
        let span = path_span(&p);
        let check = typed_binding(span, &respan(fty, span), &quote!(#p));
        self.shim(name, mode, span, check, quote!(__f(#(#args),*)), store)
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

/// A user path as seen from the generated child module: `self::x` becomes `super::x`,
/// `super::x` becomes `super::super::x`; other paths resolve through `use super::*`.
pub(crate) fn rebase(p: &syn::Path) -> syn::Path {
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
pub(crate) fn respan(ts: TokenStream, span: Span) -> TokenStream {
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

/// `ts` with the top-level identifier `name` given `span`.
fn respan_ident(ts: TokenStream, name: &str, span: Span) -> TokenStream {
    ts.into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Ident(i) = &mut tt {
                if i == name {
                    i.set_span(span);
                }
            }
            tt
        })
        .collect()
}

/// `let __f: <fn type> = <path>;` with the user's span on the type check but a call-site
/// `__f`, so the binding resolves from the (call-site) shim body even inside `macro_rules!`.
pub(crate) fn typed_binding(span: Span, fty: &TokenStream, path: &TokenStream) -> TokenStream {
    let f = syn::Ident::new("__f", Span::call_site());
    quote_spanned!(span=> let #f: #fty = #path;)
}

pub(crate) fn path_span(p: &syn::Path) -> Span {
    p.segments.last().map(|s| s.ident.span()).unwrap_or_else(Span::call_site)
}

/// Every shim of the declaration and the `OpDecl` fields that name them.
pub(crate) struct Shims {
    pub(crate) items: Vec<TokenStream>,
    pub(crate) fields: TokenStream,
}

pub(crate) fn option(v: Option<TokenStream>) -> TokenStream {
    match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// The reference shim, checked against the reference (an alias element type is caught here,
/// on the function's name) and called directly so it inlines like a plain call.
fn reference_shim(g: &Gen<'_>, fname: &syn::Ident) -> TokenStream {
    let mode = g.mode();
    let fty = g.fn_type(mode, &[], g.outputs_type(mode));
    let check = quote_spanned!(fname.span()=> let _: #fty = super::#fname;);
    let turbofish = if mode == Mode::Generic { quote!(::<T>) } else { quote!() };
    let args = g.call_args(mode);
    let call = quote!(super::#fname #turbofish (#(#args),*));
    g.shim(&format_ident!("__reference"), mode, fname.span(), check, call, g.store(g.c.contract.signature.outputs.len(), "set_output"))
}

fn shims(g: &Gen<'_>, fname: &syn::Ident) -> Shims {
    let plan = &g.c.plan;
    let sig = &g.c.contract.signature;
    let mode = g.mode();
    let n_out = sig.outputs.len();
    let mut items = vec![reference_shim(g, fname)];
    let reference_name = format_ident!("__reference");
    let (reference, reference_f64) = (g.declared(&reference_name), option(g.f64(&reference_name)));
    // The fast CPU kernel: the reference's signature at the declared dtype.
    let cpu = plan.cpu.as_ref().map(|p| {
        let name = format_ident!("__cpu");
        let fty = g.fn_type(Mode::Concrete, &[], g.outputs_type(Mode::Concrete));
        items.push(g.path_shim(&name, Mode::Concrete, p, fty, g.call_args(Mode::Concrete), g.store(n_out, "set_output")));
        quote!(#name)
    });
    // VJP: reference args + one cotangent per output -> one gradient per differentiable input.
    let (vjp, vjp_f64) = match &plan.vjp {
        Some(p) => {
            let name = format_ident!("__vjp");
            let cots: Vec<TokenStream> = sig.outputs.iter().map(|o| g.elem(o.dtype, mode)).map(|e| quote!(&[#e])).collect();
            let fty = g.fn_type(mode, &cots, g.vecs(mode, sig.differentiable_inputs().map(|t| t.dtype)));
            let mut args = g.call_args(mode);
            for (k, o) in sig.outputs.iter().enumerate() {
                let e = g.elem(o.dtype, mode);
                args.push(quote!(__cx.cotangent::<#e>(#k)?));
            }
            items.push(g.path_shim(&name, mode, p, fty, args, g.store(sig.differentiable_inputs().count(), "set_grad")));
            (option(Some(g.declared(&name))), option(g.f64(&name)))
        }
        None => (quote!(::core::option::Option::None), quote!(::core::option::Option::None)),
    };
    // JVP rules: reference args + the tangent of differentiable input k -> output tangents.
    let (mut jvp, mut jvp_f64) = (Vec::new(), Vec::new());
    for (k, (p, t)) in plan.jvp.iter().zip(sig.differentiable_inputs()).enumerate() {
        let name = format_ident!("__jvp_{}", k);
        let e = g.elem(t.dtype, mode);
        let fty = g.fn_type(mode, &[quote!(&[#e])], g.outputs_type(mode));
        let mut args = g.call_args(mode);
        args.push(quote!(__cx.tangent::<#e>()?));
        items.push(g.path_shim(&name, mode, p, fty, args, g.store(n_out, "set_output")));
        jvp.push(g.declared(&name));
        jvp_f64.extend(g.f64(&name));
    }
    let composite = plan.composite.as_ref().map(|p| {
        let p = rebase(p);
        let span = path_span(&p);
        quote_spanned!(span=> { let __g: ::op_runtime::__private::CompositeFn = #p; __g })
    });
    let (cpu, composite) = (option(cpu), option(composite));
    let fields = quote! {
        reference: #reference,
        reference_f64: #reference_f64,
        cpu: #cpu,
        vjp: #vjp,
        vjp_f64: #vjp_f64,
        jvp: &[#(#jvp),*],
        jvp_f64: &[#(#jvp_f64),*],
        composite: #composite,
        members: &[],
    };
    Shims { items, fields }
}

/// Kernel sources enter the build through `include_bytes!`, so editing one rebuilds.
fn kernel_sources(c: &Checked) -> Vec<TokenStream> {
    c.kernels
        .iter()
        .zip(c.contract.kernels.iter().chain(c.contract.vjp_kernels()))
        .map(|(lk, k)| {
            let abs = lk.abs_path.to_string_lossy().to_string();
            let path = &k.path;
            let entry = &lk.info.entry;
            let [x, y, z] = lk.info.workgroup_size;
            let launch = match lk.info.launch {
                op_spec::wgsl::Launch::Flat => quote!(::op_runtime::__private::Launch::Flat),
                op_spec::wgsl::Launch::Linear => quote!(::op_runtime::__private::Launch::Linear),
            };
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
                launch: #launch,
            })
        })
        .collect()
}

fn generate(func: &RefFn, c: &Checked) -> TokenStream {
    let fname = &func.sig.ident;
    let vis = &func.vis;
    let g = Gen { c };
    let Shims { items, fields } = if c.plan.members.is_empty() { shims(&g, fname) } else { crate::members::shims(c, fname) };
    let kernels = kernel_sources(c);
    let (contract_json, body, description) = (&c.contract_json, &c.body_tokens, &c.description);
    let hash_bytes = c.hash.iter();
    let name_str = fname.to_string();
    let site = &c.site;
    let tests = c.generated_tests.then(|| {
        quote! {
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
    });
    quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports, dead_code, clippy::all)]
        #vis mod #fname {
            use super::*;

            /// The op's static description, generated by `#[op]`.
            pub static DECL: ::op_runtime::__private::OpDecl = ::op_runtime::__private::OpDecl {
                rust_name: #name_str,
                site: #site,
                module: ::core::module_path!(),
                contract_json: #contract_json,
                body_tokens: #body,
                hash: [#(#hash_bytes),*],
                description: #description,
                kernels: &[#(#kernels),*],
                #fields
            };

            #(#items)*

            #tests
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// Declarations (without kernels: the test has no kernel files) that check cleanly.
    const SEEDS: [(&str, &str); 4] = [
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
        (
            r#"name = "a/generic", version = 1, signature<T: f16 | f64, I: u32 | i64>(x: T[n], i: I[n]) -> (y: T[n], j: I[n]),
               category = selection, tolerance = exact, backward = vjp(g_vjp), subgradient = "routed", cpu(fast, dtypes(T: f64))"#,
            "fn generic<T: Real, I: Copy>(x: &[T], i: &[I]) -> (Vec<T>, Vec<I>) { todo!() }",
        ),
    ];

    fn expand_str(attr: TokenStream, item: TokenStream) -> String {
        let (a, i) = (attr.clone(), item.clone());
        match catch_unwind(AssertUnwindSafe(|| expand(a, i, None, None).to_string())) {
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
