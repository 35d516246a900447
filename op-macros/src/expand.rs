//! Code generation only: turns a checked declaration into the user's function plus a hidden
//! module holding the op's static description and the typed call shims. Nothing is decided
//! here: `op_spec::check` validates and `op_spec::plan` decides how each shim instantiates the
//! user's functions; the shims come from `plain` (ops without dtype variables) or `members` (one
//! set per instance), each from one template (`crate::shim`), and call
//! `::op_runtime::__private` helpers (aliased `__rt` in the generated module). The output is
//! kept small, since rustc checks it once per op: `DECL` names only the parts the op has (the
//! rest come from `__rt::DECL_BASE`), the catalog entry is one `op_catalog!` invocation and the
//! generated tests are one `op_tests!` invocation.

use crate::tokens::Shims;
use op_spec::check::{check_declaration, parse_item, Checked, Location};
use op_spec::reference::RefFn;
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

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
    let Shims { items, mut fields } =
        if c.plan.members.is_empty() { crate::plain::shims(c, fname) } else { crate::members::shims(c, fname) };
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

            __rt::op_catalog!();
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
