//! Code generation only: turns a checked declaration into the user's function plus a hidden
//! module holding the op's static description and the typed call shims. Nothing is decided
//! here: `op_spec::check` validates and `op_spec::plan` decides how each shim instantiates the
//! user's functions; every shim comes from one template (`crate::shim`) and calls
//! `::op_runtime::__private` helpers (aliased `__rt` in the generated module). The output is
//! kept small, since rustc checks it once per op: `DECL` names only the parts the op has (the
//! rest come from `__rt::DECL_BASE`) and the generated tests are one `op_tests!` invocation.

use crate::shim::Invoke;
use op_spec::check::{check_declaration, parse_item, Checked, Location};
use op_spec::contract::{Arg, DType};
use op_spec::plan::{Elem, F64Path};
use op_spec::reference::RefFn;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};

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
    let site = op_spec::closure::Site::from_env(location.as_ref().map(|l| l.file.clone()), location.as_ref().map(|l| (l.line, l.column)));
    match check_declaration(attr, &func, &bases, location.as_ref(), Some(&site)) {
        // The function is re-emitted as the tokens it came in (`func` was parsed from them).
        Ok(checked) => generate(&func, item, &checked),
        Err(errors) => fallback(item, errors),
    }
}

/// The function unchanged, plus every error (tokio-macros style: the IDE keeps the item).
fn fallback(item: TokenStream, errors: Vec<syn::Error>) -> TokenStream {
    let errs = errors.iter().map(syn::Error::to_compile_error);
    quote!(#item #(#errs)*)
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
            (Mode::Generic, false) => quote!(<T: __rt::Real>),
            (Mode::Generic, true) => quote!(<T: __rt::Real + __rt::ParamValue>),
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

    /// A shim `name` from the one template, generic over `T` (declared at `t_span`, where rustc
    /// points when it names `T`) in generic mode.
    fn shim(&self, name: &syn::Ident, mode: Mode, t_span: Span, check: TokenStream, call: &Invoke) -> TokenStream {
        let generics = respan_ident(self.generics(mode), "T", t_span);
        crate::shim::shim(name, generics, check, call)
    }

    /// A shim calling user path `p` through a binding typed `fty`, the type check spanned on
    /// the path so an error lands there (once: a generic shim is checked once).
    fn path_shim(&self, name: &syn::Ident, mode: Mode, p: &syn::Path, fty: TokenStream, call: &Invoke) -> TokenStream {
        let p = rebase(p);
        let span = path_span(&p);
        let check = typed_binding(span, &respan(fty, span), &quote!(#p));
        self.shim(name, mode, span, check, call)
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
    pub(crate) fields: Fields,
}

/// `OpDecl` fields, `name: value,` each: a required field always, an optional one only where
/// the declaration has it (the description's `..__rt::DECL_BASE` has none of them).
#[derive(Default)]
pub(crate) struct Fields(Vec<TokenStream>);

impl Fields {
    pub(crate) fn set(&mut self, name: &str, value: TokenStream) {
        let name = format_ident!("{}", name);
        self.0.push(quote!(#name: #value,));
    }

    /// `name: Some(value)`, if there is a value.
    pub(crate) fn some(&mut self, name: &str, value: Option<TokenStream>) {
        if let Some(v) = value {
            self.set(name, quote!(__rt::Some(#v)));
        }
    }

    /// `name: &[values]`, if there are any.
    pub(crate) fn list(&mut self, name: &str, values: &[TokenStream]) {
        if !values.is_empty() {
            self.set(name, quote!(&[#(#values),*]));
        }
    }
}

impl quote::ToTokens for Fields {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(self.0.iter().cloned());
    }
}

pub(crate) fn option(v: Option<TokenStream>) -> TokenStream {
    match v {
        Some(v) => quote!(__rt::Some(#v)),
        None => quote!(__rt::None),
    }
}

/// The reference shim, its binding checked against the reference (an alias element type is
/// caught here, on the function's name).
fn reference_shim(g: &Gen<'_>, fname: &syn::Ident) -> TokenStream {
    let mode = g.mode();
    let fty = g.fn_type(mode, &[], g.outputs_type(mode));
    let check = reference_binding(fname, &fty, quote!());
    g.shim(&format_ident!("__reference"), mode, fname.span(), check, &Invoke::reference(g.c))
}

/// `let __f: <fty> = super::<fname><targs>;` spanned on the function's name, `__f` at the call
/// site (see [`typed_binding`]).
pub(crate) fn reference_binding(fname: &syn::Ident, fty: &TokenStream, targs: TokenStream) -> TokenStream {
    let f = syn::Ident::new("__f", Span::call_site());
    quote_spanned!(fname.span()=> let #f: #fty = super::#fname #targs;)
}

fn shims(g: &Gen<'_>, fname: &syn::Ident) -> Shims {
    let plan = &g.c.plan;
    let sig = &g.c.contract.signature;
    let mode = g.mode();
    let mut items = vec![reference_shim(g, fname)];
    let reference_name = format_ident!("__reference");
    let mut fields = Fields::default();
    fields.set("reference", g.declared(&reference_name));
    fields.some("reference_f64", g.f64(&reference_name));
    // The fast CPU kernel: the reference's signature at the declared dtype.
    if let Some(p) = &plan.cpu {
        let name = format_ident!("__cpu");
        let fty = g.fn_type(Mode::Concrete, &[], g.outputs_type(Mode::Concrete));
        items.push(g.path_shim(&name, Mode::Concrete, p, fty, &Invoke::reference(g.c)));
        fields.some("cpu", Some(quote!(#name)));
    }
    // VJP: reference args + one cotangent per output -> one gradient per differentiable input.
    if let Some(p) = &plan.vjp {
        let name = format_ident!("__vjp");
        let cots: Vec<TokenStream> = sig.outputs.iter().map(|o| g.elem(o.dtype, mode)).map(|e| quote!(&[#e])).collect();
        let fty = g.fn_type(mode, &cots, g.vecs(mode, sig.differentiable_inputs().map(|t| t.dtype)));
        items.push(g.path_shim(&name, mode, p, fty, &Invoke::vjp(g.c)));
        fields.some("vjp", Some(g.declared(&name)));
        fields.some("vjp_f64", g.f64(&name));
    }
    // The VJP's `cpu` kernel: the rule's signature at the declared dtype.
    if let Some(p) = &plan.vjp_cpu {
        let name = format_ident!("__vjp_cpu");
        let c = Mode::Concrete;
        let cots: Vec<TokenStream> = sig.outputs.iter().map(|o| g.elem(o.dtype, c)).map(|e| quote!(&[#e])).collect();
        let fty = g.fn_type(c, &cots, g.vecs(c, sig.differentiable_inputs().map(|t| t.dtype)));
        items.push(g.path_shim(&name, c, p, fty, &Invoke::vjp(g.c)));
        fields.some("vjp_cpu", Some(quote!(#name)));
    }
    // JVP rules: reference args + the tangent of differentiable input k -> output tangents.
    let (mut jvp, mut jvp_f64) = (Vec::new(), Vec::new());
    for (k, (p, t)) in plan.jvp.iter().zip(sig.differentiable_inputs()).enumerate() {
        let name = format_ident!("__jvp_{}", k);
        let e = g.elem(t.dtype, mode);
        let fty = g.fn_type(mode, &[quote!(&[#e])], g.outputs_type(mode));
        items.push(g.path_shim(&name, mode, p, fty, &Invoke::jvp(g.c)));
        jvp.push(g.declared(&name));
        jvp_f64.extend(g.f64(&name));
    }
    fields.list("jvp", &jvp);
    fields.list("jvp_f64", &jvp_f64);
    fields.some("composite", composite(plan));
    Shims { items, fields }
}

/// The composite builder, typed where it is named.
pub(crate) fn composite(plan: &op_spec::plan::ShimPlan) -> Option<TokenStream> {
    plan.composite.as_ref().map(|p| {
        let p = rebase(p);
        let span = path_span(&p);
        quote_spanned!(span=> { let __g: ::op_runtime::__private::CompositeFn = #p; __g })
    })
}

/// Kernel sources enter the build through `include_bytes!`, so editing one rebuilds.
fn kernel_sources(c: &Checked) -> Vec<TokenStream> {
    c.kernels
        .iter()
        .zip(c.contract.embedded_kernels())
        .map(|(lk, k)| {
            let abs = lk.abs_path.to_string_lossy().to_string();
            let path = &k.path;
            let entry = &lk.info.entry;
            let [x, y, z] = lk.info.workgroup_size;
            let launch = match lk.info.launch {
                op_spec::wgsl::Launch::Flat => quote!(__rt::Launch::Flat),
                op_spec::wgsl::Launch::Linear => quote!(__rt::Launch::Linear),
            };
            let headers = lk.headers.iter().map(|(rel, abs, _)| {
                let abs = abs.to_string_lossy().to_string();
                quote!((#rel, include_bytes!(#abs)))
            });
            quote!(__rt::KernelSource {
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

/// The function (`item`, which `func` was parsed from) and its generated module.
fn generate(func: &RefFn, item: TokenStream, c: &Checked) -> TokenStream {
    let fname = &func.sig.ident;
    let vis = &func.vis;
    let g = Gen { c };
    let Shims { items, mut fields } = if c.plan.members.is_empty() { shims(&g, fname) } else { crate::members::shims(c, fname) };
    fields.list("kernels", &kernel_sources(c));
    if !c.description.is_empty() {
        fields.set("description", c.description.to_token_stream());
    }
    let (contract_json, body) = (&c.contract_json, &c.body_tokens);
    let hash = proc_macro2::Literal::byte_string(&c.hash);
    let name_str = fname.to_string();
    let site = &c.site;
    // The generated tests: one `#[cfg(test)]` invocation of the runtime's `op_tests!`.
    let tests = c.generated_tests.then(|| quote!(#[cfg(test)] __rt::op_tests!();));
    // `DECL` is a `const` (`&DECL` is still `&'static`): the shims it names, and the
    // instantiations of the user's generic functions they make, are compiled where the op is
    // used, as a generic function's are; `__rt` keeps the generated paths short.
    quote! {
        #item

        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports, dead_code, clippy::all)]
        #vis mod #fname {
            use super::*;
            use ::op_runtime::__private as __rt;

            /// The op's static description, generated by `#[op]`.
            pub const DECL: __rt::OpDecl = __rt::OpDecl {
                rust_name: #name_str,
                site: #site,
                module: ::core::module_path!(),
                contract_json: #contract_json,
                body_tokens: #body,
                hash: *#hash,
                #fields
                ..__rt::DECL_BASE
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
            assert!(out.contains("pub const DECL"), "{out}");
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
