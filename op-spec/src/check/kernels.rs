//! Kernel rules: every kernel, forward or VJP, goes through one set of checks against the
//! signature of the op it computes (`check_kernel_set`): binding coverage, symbols and operands
//! of its launch and uniform block, the members it serves, its launch geometry, then its file
//! (paths resolved by `paths`) and source, handed to its language's checks (`wgsl`, `cuda`, and
//! NVRTC where it loads). Reads files but must not generate code.

use super::constraints::{check_launch_geometry, Solver};
use super::cuda::check_cuda;
use super::dtypes::{check_kernel_selections, instantiate, served};
use super::paths::{self, Base};
use super::symbols::{bound_dim_symbols, check_kernel_symbols};
use super::LoadedKernel;
use crate::contract::{Access, KernelLang};
use crate::ctxt::Ctxt;
use crate::model::*;
use crate::wgsl::{check_wgsl, KernelInfo};
use op_contract::generic::{binding_text, cuda_prelude, wgsl_prelude};
use std::path::{Path, PathBuf};

/// Every check of a list of kernels that compute one op (the forward kernels against the op's
/// signature, the VJP kernels against the VJP op's): the same rules for both, in one place.
/// Returns the kernels whose file and source checked, in declaration order.
pub(super) fn check_kernel_set(cx: &Ctxt, kernels: &[SKernel], sig: &SSignature, bases: &[Base]) -> Vec<LoadedKernel> {
    let mut sound = Vec::with_capacity(kernels.len());
    for k in kernels {
        let before = cx.error_count();
        let covered = check_binding_coverage(cx, k, sig);
        check_kernel_symbols(cx, sig, k);
        sound.push(covered && cx.error_count() == before);
    }
    check_kernel_selections(cx, kernels, sig);
    if sig.gaps.none() {
        check_launch_geometry(cx, kernels, &Solver::new(sig, &bound_dim_symbols(sig)));
    }
    let mut loaded = Vec::new();
    for (k, ok) in kernels.iter().zip(sound) {
        // A kernel is compared with its source only if its descriptor is sound: a source
        // checked against a broken descriptor would only repeat the descriptor's error.
        if let Some(lk) = load_and_check_kernel(cx, k, sig, bases, ok && sig.gaps.none()) {
            loaded.push(lk);
        }
    }
    loaded
}

// Rule: each kernel binds every tensor exactly once, inputs `read`, outputs `read_write` or
// `accumulate`, names only tensors of the signature, and has at most one uniform block. Returns whether the
// descriptor is present and sound.
pub(super) fn check_binding_coverage(cx: &Ctxt, k: &SKernel, sig: &SSignature) -> bool {
    let before = cx.error_count();
    let inputs: Vec<String> = sig.inputs().map(|t| t.name.to_string()).collect();
    let outputs: Vec<String> = sig.outputs.iter().map(|o| o.name.to_string()).collect();
    let mut bound: Vec<String> = Vec::new();
    let mut uniforms = 0;
    for b in &k.bindings {
        match b {
            SBinding::Buffer { name, access, .. } => {
                let s = name.to_string();
                if bound.contains(&s) {
                    cx.error(syn::Error::new(name.span(), format!("tensor `{s}` is bound twice; bind each tensor exactly once")));
                    continue;
                }
                bound.push(s.clone());
                check_buffer_role(cx, sig, name, access, (&inputs, &outputs));
            }
            SBinding::Uniform { span, fields } => {
                uniforms += 1;
                if uniforms > 1 {
                    cx.error(span.error("a kernel has at most one `uniform(...)` block; merge the fields into one"));
                }
                let mut seen: Vec<String> = Vec::new();
                for f in fields {
                    if seen.contains(&f.to_string()) {
                        cx.error(syn::Error::new(f.span(), format!("uniform field `{f}` is listed twice; list each field once")));
                    }
                    seen.push(f.to_string());
                }
            }
        }
    }
    let anchor = k.bindings_span.unwrap_or(k.span);
    for t in inputs.iter().chain(outputs.iter()) {
        if !bound.contains(t) && k.bindings_span.is_some() {
            let access = if inputs.contains(t) { "read" } else { "read_write" };
            cx.error(anchor.error(format!("tensor `{t}` is not bound by this kernel; add `{t}: {access}` to `bindings(...)`")));
        }
    }
    k.bindings_span.is_some() && cx.error_count() == before
}

/// A buffer binding's name against the signature: an input `read`, an output `read_write` (or
/// `accumulate`: the kernel adds into it, from zero), never a parameter or an unknown name.
fn check_buffer_role(cx: &Ctxt, sig: &SSignature, name: &syn::Ident, access: &Spanned<Access>, (inputs, outputs): (&[String], &[String])) {
    let s = name.to_string();
    if inputs.contains(&s) {
        if access.value == Access::Accumulate {
            cx.error(access.span.error(format!(
                "input `{s}` cannot be bound `accumulate`: only outputs accumulate (they start at zero); bind the input `read`"
            )));
        } else if access.value != Access::Read {
            cx.error(access.span.error(format!("input `{s}` must be bound `read`: kernels may not write their inputs")));
        }
    } else if outputs.contains(&s) {
        if access.value == Access::Read {
            cx.error(access.span.error(format!(
                "output `{s}` must be bound `read_write` (the kernel writes it) or `accumulate` (the kernel adds into it, from zero)"
            )));
        }
    } else if sig.param(&s).is_some() {
        cx.error(syn::Error::new(name.span(), format!("`{s}` is a scalar parameter: pass it in `uniform({s})`, not as a buffer")));
    } else if sig.gaps.none() {
        // (With a part of the signature unparsed, the name may be that part's.)
        let all: Vec<String> = inputs.iter().chain(outputs).map(|t| format!("`{t}`")).collect();
        cx.error(syn::Error::new(
            name.span(),
            format!(
                "`{s}` is not a tensor of the signature (tensors: {}); bind only those, or declare `{s}` in the signature",
                all.join(", ")
            ),
        ));
    }
}

/// `#include "..."` targets of a CUDA source, in order.
pub fn cuda_includes(src: &str) -> Vec<String> {
    src.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix('#')?.trim_start().strip_prefix("include")?.trim();
            let rest = rest.strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

/// How a language names its headers: the targets a source includes, and the name of target
/// `inc` as included from directory `dir`.
type IncludeRules = (fn(&str) -> Vec<String>, fn(&str, &str) -> String);

/// A kernel's headers, transitively: CUDA `#include "..."`s, WGSL `// @include "..."`s (see
/// `op_contract::wgsl_include`), each (path relative to the kernel's base, absolute path, bytes),
/// sorted by path. Each resolves from the base the kernel was found from and must stay inside
/// that crate.
fn load_headers(cx: &Ctxt, k: &SKernel, base: &Base, text: &str) -> Option<Vec<(String, PathBuf, Vec<u8>)>> {
    use op_contract::wgsl_include::{dir_of, resolve};
    // WGSL names each file once (its keys are what the runtime's expansion looks up); CUDA's
    // keys stay as the source spells them, the names NVRTC is handed.
    let (includes, join): IncludeRules = match k.lang {
        KernelLang::Cuda => (cuda_includes, |d, i| Path::new(d).join(i).to_string_lossy().replace('\\', "/")),
        KernelLang::Wgsl => (op_contract::wgsl_include::includes, resolve),
    };
    let mut headers: Vec<(String, PathBuf, Vec<u8>)> = Vec::new();
    let dir = dir_of(&k.path.value());
    let mut queue: Vec<(String, String)> = includes(text).into_iter().map(|i| (dir.clone(), i)).collect();
    while let Some((d, inc)) = queue.pop() {
        let rel = join(&d, &inc);
        if headers.iter().any(|h| h.0 == rel) {
            continue;
        }
        match paths::read_in(base, &rel) {
            Ok(found) => {
                let ht = String::from_utf8_lossy(&found.bytes).to_string();
                let hd = dir_of(&rel);
                queue.extend(includes(&ht).into_iter().map(|i| (hd.clone(), i)));
                headers.push((rel, found.abs, found.bytes));
            }
            Err(e) => {
                cx.error(syn::Error::new(k.path.span(), format!("header `{inc}` included by this kernel (as `{rel}`) {e}")));
                return None;
            }
        }
    }
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    Some(headers)
}

/// A WGSL kernel's source with its `// @include`s expanded from its loaded headers (what the
/// runtime compiles too); reported on the path when a header is not UTF-8.
fn expand_wgsl(cx: &Ctxt, k: &SKernel, text: &str, headers: &[(String, PathBuf, Vec<u8>)]) -> Option<String> {
    let mut texts = Vec::with_capacity(headers.len());
    for (rel, _, bytes) in headers {
        match std::str::from_utf8(bytes) {
            Ok(t) => texts.push((rel.as_str(), t)),
            Err(_) => {
                cx.error(syn::Error::new(k.path.span(), format!("header `{rel}` included by this kernel is not UTF-8 text")));
                return None;
            }
        }
    }
    match op_contract::wgsl_include::expand(&k.path.value(), text, &texts) {
        Ok(t) => Some(t),
        Err(e) => {
            cx.error(syn::Error::new(k.path.span(), e));
            None
        }
    }
}

// Rule: kernel files exist inside the crate; WGSL kernels match their descriptor (see `wgsl`);
// CUDA kernels match it (see `cuda`), their headers exist, and where NVRTC loads they compile.
pub(super) fn load_and_check_kernel(
    cx: &Ctxt,
    k: &SKernel,
    sig: &SSignature,
    bases: &[Base],
    check_contents: bool,
) -> Option<LoadedKernel> {
    let paths::Found { abs: abs_path, bytes, base } = match paths::find(bases, &k.path.value()) {
        Ok(found) => found,
        Err(e) => {
            cx.error(syn::Error::new(k.path.span(), format!("kernel source `{}` {e}", k.path.value())));
            return None;
        }
    };
    if !check_contents {
        return None;
    }
    let Ok(text) = String::from_utf8(bytes.clone()) else {
        cx.error(syn::Error::new(k.path.span(), "kernel source is not UTF-8 text"));
        return None;
    };
    let mut info = None;
    let headers = load_headers(cx, k, &base, &text)?;
    let text = match k.lang {
        KernelLang::Wgsl => expand_wgsl(cx, k, &text, &headers)?,
        KernelLang::Cuda => text,
    };
    for (label, prelude, vsig) in variants(k, sig) {
        let sub = Ctxt::new();
        let full = format!("{prelude}{text}");
        let got = match k.lang {
            KernelLang::Wgsl => check_wgsl(&sub, k, &vsig, &full),
            KernelLang::Cuda => {
                let header_texts: Vec<String> = headers.iter().map(|h| String::from_utf8_lossy(&h.2).to_string()).collect();
                let refs: Vec<&str> = header_texts.iter().map(String::as_str).collect();
                let entry = check_cuda(&sub, k, &vsig, &full, &refs);
                if entry.is_some() {
                    check_nvrtc(&sub, k, &full, &headers);
                }
                entry.map(|entry| KernelInfo {
                    entry,
                    workgroup_size: {
                        let yz = |d: usize| k.block_yz.get(d).map_or(1, |b| b.value);
                        [k.block.as_ref().map(|b| b.value).unwrap_or(256), yz(0), yz(1)]
                    },
                    launch: crate::wgsl::Launch::Flat,
                })
            }
        };
        let failed = sub.has_errors();
        for e in sub.check().err().unwrap_or_default() {
            cx.error(match &label {
                Some(l) => syn::Error::new(e.span(), format!("{e} (checked with `{l}`)")),
                None => e,
            });
        }
        if failed {
            // The first failing member's errors stand for the rest (most repeat across them).
            return None;
        }
        info = info.or(got);
    }
    Some(LoadedKernel { abs_path, bytes, headers, info: info? })
}

/// The instances a kernel's source is checked at: one, as written, for an op without dtype
/// variables; else one per binding it serves, with the engine's prelude (`alias T = f16;`,
/// `typedef __half T;`) and the signature at that binding, labelled `T = f16`. A WGSL binding
/// without a WGSL type is left out (`dtypes` reports it).
fn variants(k: &SKernel, sig: &SSignature) -> Vec<(Option<String>, String, SSignature)> {
    if sig.vars.is_empty() {
        return vec![(None, String::new(), sig.clone())];
    }
    let vars: Vec<_> = sig.vars.iter().map(SDTypeVar::to_var).collect();
    served(sig, k.selection())
        .into_iter()
        .filter_map(|b| {
            let prelude = match k.lang {
                KernelLang::Wgsl => wgsl_prelude(&vars, &b).ok()?,
                KernelLang::Cuda => cuda_prelude(&vars, &b),
            };
            Some((Some(binding_text(&vars, &b)), prelude, instantiate(sig, &b)))
        })
        .collect()
}

/// Offers `body` under `name` unless a header already has that name (NVRTC refuses a program
/// whose header names repeat).
fn push_unique(named: &mut Vec<(String, String)>, name: String, body: &str) {
    if !named.iter().any(|(n, _)| *n == name) {
        named.push((name, body.to_string()));
    }
}

/// Compiles a CUDA kernel with NVRTC when it loads, reporting its errors on the path.
fn check_nvrtc(cx: &Ctxt, k: &SKernel, text: &str, headers: &[(String, PathBuf, Vec<u8>)]) {
    let mut named: Vec<(String, String)> = Vec::new();
    for (rel, _, bytes) in headers {
        let body = String::from_utf8_lossy(bytes).to_string();
        // Offered under every name an `#include` may use: as written, the crate path, the file name.
        let file = Path::new(rel).file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
        for name in [rel.clone(), file] {
            push_unique(&mut named, name, &body);
        }
    }
    let mut written: Vec<String> = cuda_includes(text);
    headers.iter().for_each(|h| written.extend(cuda_includes(&String::from_utf8_lossy(&h.2))));
    for w in written {
        let file = Path::new(&w).file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
        if let Some((_, body)) =
            named.iter().find(|(n, _)| Path::new(n).file_name().map(|f| f.to_string_lossy().to_string()) == Some(file.clone()))
        {
            let body = body.clone();
            push_unique(&mut named, w, &body);
        }
    }
    let path = k.path.value();
    let Some(Err(log)) = crate::nvrtc::compile(text, &path, &named) else { return };
    let (major, minor) = crate::nvrtc::version().unwrap_or_default();
    let errors: Vec<&str> = log.lines().filter(|l| l.contains("error")).take(8).collect();
    let shown = if errors.is_empty() { log.lines().take(8).collect::<Vec<_>>().join("; ") } else { errors.join("; ") };
    cx.error(syn::Error::new(
        k.path.span(),
        format!("the CUDA kernel `{path}` does not compile (NVRTC {major}.{minor}): {shown}; fix the CUDA source"),
    ));
}

#[cfg(test)]
mod tests {
    use crate::check::{check_tokens, Checked};
    use crate::model::OpAttr;
    use quote::quote;

    #[test]
    fn a_broken_descriptor_is_not_compared_with_its_source() {
        let scratch = tempfile::Builder::new().prefix("op-spec-check-").tempdir().unwrap();
        let dir = scratch.path().to_path_buf();
        std::fs::write(
            dir.join("k.wgsl"),
            "@group(0) @binding(0) var<storage, read> x: array<f32>;\n@group(0) @binding(1) var<storage, read_write> out: array<f32>;\n@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { out[g.x] = x[g.x]; }\n",
        )
        .unwrap();
        let attr = |b: proc_macro2::TokenStream| {
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none,
                kernel(wgsl = "k.wgsl", #b, threads = n))
        };
        let item = quote!(
            fn f<T: Real>(x: &[T]) -> Vec<T> {
                todo!()
            }
        );
        let bases = [dir];
        assert!(check_tokens(attr(quote!(bindings(x: read, out: read_write))), item.clone(), &bases).is_ok());
        let msgs = |r: Result<(Checked, OpAttr), Vec<syn::Error>>| {
            r.err().unwrap_or_default().into_iter().map(|e| e.to_string()).collect::<Vec<_>>()
        };
        let e = msgs(check_tokens(attr(quote!(bindings(out: read_write))), item.clone(), &bases));
        assert_eq!(e, vec!["tensor `x` is not bound by this kernel; add `x: read` to `bindings(...)`".to_string()]);
        let e = msgs(check_tokens(attr(quote!(bindings(x: read, out: write))), item.clone(), &bases));
        assert_eq!(e, vec!["unknown access `write`; valid: read, read_write, accumulate".to_string()]);
        let e = msgs(check_tokens(
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0),
            backward = none, kernel(wgsl = "nope.wgsl", bindings(x: read, out: read_write), threads = n)),
            item,
            &bases,
        ));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("kernel source `nope.wgsl` does not exist relative to the crate's Cargo.toml"), "{}", e[0]);
    }

    /// A fresh crate directory `<scratch>/krate` (with a `Cargo.toml`) holding `kernels/k.wgsl`
    /// and `kernels/k.cu`; the scratch directory (room for files beside the crate) goes when the
    /// guard drops.
    fn crate_dir(tag: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let scratch = tempfile::Builder::new().prefix(&format!("op-spec-kernels-{tag}-")).tempdir().unwrap();
        let dir = scratch.path().join("krate");
        std::fs::create_dir_all(dir.join("kernels")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"k\"\n").unwrap();
        std::fs::write(
            dir.join("kernels/k.wgsl"),
            "struct P { n: u32 }\n@group(0) @binding(0) var<storage, read> x: array<f32>;\n@group(0) @binding(1) var<storage, read_write> out: array<f32>;\n@group(0) @binding(2) var<uniform> p: P;\n@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { if (g.x < p.n) { out[g.x] = x[g.x]; } }\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("kernels/k.cu"),
            "extern \"C\" __global__ void k(const float* x, float* out, unsigned int n) { unsigned int i = threadIdx.x; if (i < n) out[i] = undefined_helper(x[i]); }\n",
        )
        .unwrap();
        (scratch, dir)
    }

    fn errors(kernel: proc_macro2::TokenStream, bases: &[std::path::PathBuf]) -> Vec<String> {
        let attr = quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none, #kernel);
        let item = quote!(
            fn f<T: Real>(x: &[T]) -> Vec<T> {
                todo!()
            }
        );
        check_tokens(attr, item, bases).err().unwrap_or_default().into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn kernel_paths_are_relative_and_inside_the_crate() {
        let (_scratch, dir) = crate_dir("paths");
        let bases = [dir.clone()];
        assert!(
            errors(quote!(kernel(wgsl = "kernels/k.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n)), &bases).is_empty()
        );
        let abs = dir.join("kernels/k.wgsl").to_string_lossy().to_string();
        let e = errors(quote!(kernel(wgsl = #abs, bindings(x: read, out: read_write, uniform(n)), threads = n)), &bases);
        assert!(e[0].contains("is an absolute path"), "{e:?}");
        // `..` that stays inside is fine; past the crate's root it is refused, even if the file exists.
        let e =
            errors(quote!(kernel(wgsl = "kernels/../kernels/k.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n)), &bases);
        assert!(e.is_empty(), "{e:?}");
        let sibling = "outside.wgsl";
        std::fs::copy(dir.join("kernels/k.wgsl"), dir.parent().unwrap().join(sibling)).unwrap();
        let outside = format!("../{sibling}");
        let e = errors(quote!(kernel(wgsl = #outside, bindings(x: read, out: read_write, uniform(n)), threads = n)), &bases);
        assert!(e[0].contains("leaves the crate"), "{e:?}");
    }

    /// A header named through `// @include` (WGSL) or `#include` (CUDA) resolves from the
    /// kernel's own base and may not leave the crate either, even where the file exists.
    #[test]
    fn include_paths_stay_inside_the_crate() {
        let (_scratch, dir) = crate_dir("includes");
        let outside = dir.parent().unwrap().join("outside.wgsl");
        std::fs::write(&outside, "fn twice(v: f32) -> f32 { return v + v; }\n").unwrap();
        std::fs::copy(&outside, outside.with_extension("cuh")).unwrap();
        let name = outside.file_name().unwrap().to_string_lossy().to_string();
        let wgsl = std::fs::read_to_string(dir.join("kernels/k.wgsl")).unwrap();
        std::fs::write(dir.join("kernels/inc.wgsl"), format!("// @include \"../../{name}\"\n{wgsl}")).unwrap();
        std::fs::write(dir.join("kernels/lib.wgsl"), "fn twice(v: f32) -> f32 { return v + v; }\n").unwrap();
        std::fs::write(dir.join("kernels/inc_ok.wgsl"), format!("// @include \"./lib.wgsl\"\n{wgsl}")).unwrap();
        let cu = std::fs::read_to_string(dir.join("kernels/k.cu")).unwrap();
        let cuh = name.replace(".wgsl", ".cuh");
        std::fs::write(dir.join("kernels/inc.cu"), format!("#include \"../../{cuh}\"\n{cu}")).unwrap();
        let bases = [dir.clone()];
        let decl = |lang: &str, path: &str| {
            let lang = syn::Ident::new(lang, proc_macro2::Span::call_site());
            let path = syn::LitStr::new(path, proc_macro2::Span::call_site());
            quote!(kernel(#lang = #path, bindings(x: read, out: read_write, uniform(n)), threads = n))
        };
        assert!(errors(decl("wgsl", "kernels/inc_ok.wgsl"), &bases).is_empty());
        let e = errors(decl("wgsl", "kernels/inc.wgsl"), &bases);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with(&format!("header `../../{name}` included by this kernel (as `../{name}`) leaves the crate")), "{}", e[0]);
        let e = errors(decl("cuda", "kernels/inc.cu"), &bases);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with(&format!("header `../../{cuh}` included by this kernel (as `kernels/../../{cuh}`) leaves the crate")),
            "{}",
            e[0]
        );
    }

    /// The kernel file the checker reads is the absolute path the expansion embeds.
    #[test]
    fn the_loaded_kernel_is_the_absolute_file_read() {
        let (_scratch, dir) = crate_dir("embed");
        let attr = quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none,
            kernel(wgsl = "kernels/./k.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n));
        let item = quote!(
            fn f<T: Real>(x: &[T]) -> Vec<T> {
                todo!()
            }
        );
        let (checked, _) = check_tokens(attr, item, std::slice::from_ref(&dir)).map_err(|e| e[0].to_string()).unwrap();
        assert_eq!(checked.kernels[0].abs_path, dir.join("kernels/k.wgsl"));
        assert_eq!(checked.kernels[0].bytes, std::fs::read(dir.join("kernels/k.wgsl")).unwrap());
    }

    /// A CUDA output the source never names again is never written; one it uses, anywhere, may
    /// be (lexical and lenient: no correct kernel is refused).
    #[test]
    fn a_cuda_output_never_used_is_refused() {
        let (_scratch, dir) = crate_dir("cuda-written");
        let good = "extern \"C\" __global__ void k(const float* x, float* out, unsigned int n) { unsigned int i = threadIdx.x; if (i < n) out[i] = x[i]; }\n";
        std::fs::write(dir.join("kernels/good.cu"), good).unwrap();
        std::fs::write(dir.join("kernels/unused.cu"), good.replace("out[i] = x[i];", "(void)x[i];")).unwrap();
        std::fs::write(dir.join("kernels/unnamed.cu"), good.replace("float* out", "float*").replace("out[i] = x[i];", "(void)x[i];"))
            .unwrap();
        let bases = [dir];
        let decl = |path: &str| {
            let path = syn::LitStr::new(path, proc_macro2::Span::call_site());
            quote!(kernel(cuda = #path, bindings(x: read, out: read_write, uniform(n)), threads = n))
        };
        let e = errors(decl("kernels/good.cu"), &bases);
        assert!(e.is_empty(), "{e:?}");
        let e = errors(decl("kernels/unused.cu"), &bases);
        assert_eq!(e, ["`out` is bound `read_write` (an output, the kernel's to write) but CUDA kernel `k` never uses its parameter `out` after declaring it, so it never writes it; store to every element of it"]);
        let e = errors(decl("kernels/unnamed.cu"), &bases);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("CUDA parameter 1 of `k` (`float*`) has no name, so the kernel cannot write it"), "{}", e[0]);
    }

    #[test]
    fn an_empty_extent_is_reported_on_that_extent() {
        let (_scratch, dir) = crate_dir("extent");
        let bases = [dir];
        let e = errors(quote!(kernel(wgsl = "kernels/k.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = (n, 0))), &bases);
        assert!(e[0].starts_with("`0`, the y extent of `threads = (n, 0)`, is 0 with n = 1 (admissible under the constraints) while output `out` has 1 element(s)"), "{e:?}");
    }

    #[test]
    fn launch_geometry_covers_non_empty_outputs() {
        let (_scratch, dir) = crate_dir("threads");
        let bases = [dir];
        let e = errors(quote!(kernel(wgsl = "kernels/k.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n / 2)), &bases);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("`threads = n / 2` is 0 with n = 1 (admissible under the constraints) while output `out` has 1 element(s)"),
            "{}",
            e[0]
        );
        let e = errors(quote!(kernel(wgsl = "kernels/k.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n - 1)), &bases);
        assert!(e[0].starts_with("`threads = n - 1` is -1 with n = 0"), "{e:?}");
        // Zero threads for an empty output is fine; a constant launch of 256 is fine.
        assert!(
            errors(quote!(kernel(wgsl = "kernels/k.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n)), &bases).is_empty()
        );
        assert!(errors(quote!(kernel(wgsl = "kernels/k.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = 256)), &bases)
            .is_empty());
    }

    /// Where NVRTC loads, a kernel that passes the lexical checks but does not compile is
    /// reported on its path (`OP_REQUIRE_NVRTC=1` makes a missing NVRTC a failure).
    #[test]
    fn cuda_kernels_compile_where_nvrtc_loads() {
        let (_scratch, dir) = crate_dir("nvrtc");
        let bases = [dir];
        let e = errors(quote!(kernel(cuda = "kernels/k.cu", bindings(x: read, out: read_write, uniform(n)), threads = n)), &bases);
        if crate::nvrtc::version().is_none() {
            assert!(std::env::var("OP_REQUIRE_NVRTC").is_err(), "OP_REQUIRE_NVRTC is set but NVRTC does not load");
            assert!(e.is_empty(), "{e:?}");
            return;
        }
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("the CUDA kernel `kernels/k.cu` does not compile (NVRTC"), "{}", e[0]);
        assert!(e[0].contains("undefined_helper"), "{}", e[0]);
    }

    /// A kernel that includes a header is compiled too (its header offered under each name an
    /// `#include` may use, each name once: NVRTC refuses repeated names, which once made every
    /// kernel with a header skip the compile silently).
    #[test]
    fn cuda_kernels_with_headers_compile_where_nvrtc_loads() {
        let (_scratch, dir) = crate_dir("nvrtc-headers");
        std::fs::write(dir.join("kernels/twice.cuh"), "#pragma once\n__device__ inline float twice(float v) { return v + v; }\n").unwrap();
        let good = "#include \"twice.cuh\"\nextern \"C\" __global__ void k(const float* x, float* out, unsigned int n) { unsigned int i = threadIdx.x; if (i < n) out[i] = twice(x[i]); }\n";
        std::fs::write(dir.join("kernels/h.cu"), good).unwrap();
        std::fs::write(dir.join("kernels/bad.cu"), good.replace("twice(x[i]);", "twice(x[i])")).unwrap();
        let bases = [dir];
        let decl = |path: &str| {
            let path = syn::LitStr::new(path, proc_macro2::Span::call_site());
            quote!(kernel(cuda = #path, bindings(x: read, out: read_write, uniform(n)), threads = n))
        };
        let (good, bad) = (errors(decl("kernels/h.cu"), &bases), errors(decl("kernels/bad.cu"), &bases));
        assert!(good.is_empty(), "{good:?}");
        if crate::nvrtc::version().is_none() {
            assert!(std::env::var("OP_REQUIRE_NVRTC").is_err(), "OP_REQUIRE_NVRTC is set but NVRTC does not load");
            assert!(bad.is_empty(), "{bad:?}");
            return;
        }
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].starts_with("the CUDA kernel `kernels/bad.cu` does not compile (NVRTC"), "{}", bad[0]);
    }
}
