//! Kernel rules: binding coverage, loading kernel files and CUDA headers, CUDA entry and
//! parameter checks (WGSL sources are `wgsl`'s). Reads files but must not generate code.

use super::LoadedKernel;
use crate::contract::{Access, KernelLang};
use crate::ctxt::Ctxt;
use crate::model::*;
use crate::wgsl::{check_wgsl, KernelInfo};
use std::path::{Path, PathBuf};

// Rule: each kernel binds every tensor exactly once, inputs `read`, outputs `read_write`,
// names only tensors of the signature, and has at most one uniform block. Returns whether the
// descriptor is present and sound.
pub(super) fn check_binding_coverage(cx: &Ctxt, k: &SKernel, sig: &SSignature, dims: &[String]) -> bool {
    let before = cx.error_count();
    let _ = dims;
    let inputs: Vec<String> = sig
        .args
        .iter()
        .filter_map(|a| match a {
            SArg::Tensor(t) => Some(t.name.to_string()),
            _ => None,
        })
        .collect();
    let outputs: Vec<String> = sig.outputs.iter().map(|o| o.name.to_string()).collect();
    let params: Vec<String> = sig
        .args
        .iter()
        .filter_map(|a| match a {
            SArg::Param(p) => Some(p.name.to_string()),
            _ => None,
        })
        .collect();
    let mut bound: Vec<String> = Vec::new();
    let mut uniforms = 0;
    for b in &k.bindings {
        match b {
            SBinding::Buffer { name, access } => {
                let s = name.to_string();
                if bound.contains(&s) {
                    cx.error(syn::Error::new(name.span(), format!("tensor `{s}` is bound twice; bind each tensor exactly once")));
                    continue;
                }
                bound.push(s.clone());
                if inputs.contains(&s) {
                    if access.value != Access::Read {
                        cx.error(access.span.error(format!("input `{s}` must be bound `read`: kernels may not write their inputs")));
                    }
                } else if outputs.contains(&s) {
                    if access.value != Access::ReadWrite {
                        cx.error(access.span.error(format!("output `{s}` must be bound `read_write`: the kernel writes it")));
                    }
                } else if params.contains(&s) {
                    cx.error(syn::Error::new(
                        name.span(),
                        format!("`{s}` is a scalar parameter: pass it in `uniform({s})`, not as a buffer"),
                    ));
                } else {
                    let mut all = inputs.clone();
                    all.extend(outputs.iter().cloned());
                    let all: Vec<String> = all.iter().map(|t| format!("`{t}`")).collect();
                    cx.error(syn::Error::new(
                        name.span(),
                        format!(
                            "`{s}` is not a tensor of the signature (tensors: {}); bind only those, or declare `{s}` in the signature",
                            all.join(", ")
                        ),
                    ));
                }
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

/// Reads `rel` against each base in turn. The error text completes "kernel source `rel` ..."
/// and holds no absolute path (diagnostics must not depend on the machine).
fn read_relative(bases: &[PathBuf], rel: &str) -> Result<(PathBuf, Vec<u8>), String> {
    if bases.is_empty() {
        return Err("cannot be found: the crate directory is unknown (CARGO_MANIFEST_DIR is not set)".to_string());
    }
    let mut other: Option<std::io::Error> = None;
    for base in bases {
        let abs = base.join(rel);
        match std::fs::read(&abs) {
            Ok(b) => return Ok((abs, b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => other = other.or(Some(e)),
        }
    }
    Err(match other {
        Some(e) => format!("cannot be read ({e}); check the file's permissions and that it is a file"),
        None => "does not exist relative to the crate's Cargo.toml or to the declaring file's directory; fix the path or add the file"
            .to_string(),
    })
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

// Rule: kernel files exist; WGSL kernels match their descriptor (see `wgsl`); CUDA kernels
// have their entry and one parameter per descriptor field, and their headers exist.
pub(super) fn load_and_check_kernel(
    cx: &Ctxt,
    k: &SKernel,
    sig: &SSignature,
    base: &[PathBuf],
    check_contents: bool,
) -> Option<LoadedKernel> {
    let (abs_path, bytes) = match read_relative(base, &k.path.value()) {
        Ok(x) => x,
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
    match k.lang {
        KernelLang::Wgsl => {
            let info = check_wgsl(cx, k, sig, &text)?;
            Some(LoadedKernel { abs_path, bytes, headers: Vec::new(), info })
        }
        KernelLang::Cuda => {
            let mut headers: Vec<(String, PathBuf, Vec<u8>)> = Vec::new();
            let dir = Path::new(&k.path.value()).parent().map(Path::to_path_buf).unwrap_or_default();
            let mut queue: Vec<(PathBuf, String)> = cuda_includes(&text).into_iter().map(|i| (dir.clone(), i)).collect();
            while let Some((d, inc)) = queue.pop() {
                let rel = d.join(&inc).to_string_lossy().replace('\\', "/");
                if headers.iter().any(|h| h.0 == rel) {
                    continue;
                }
                match read_relative(base, &rel) {
                    Ok((abs, hb)) => {
                        let ht = String::from_utf8_lossy(&hb).to_string();
                        let hd = Path::new(&rel).parent().map(Path::to_path_buf).unwrap_or_default();
                        queue.extend(cuda_includes(&ht).into_iter().map(|i| (hd.clone(), i)));
                        headers.push((rel, abs, hb));
                    }
                    Err(e) => {
                        cx.error(syn::Error::new(k.path.span(), format!("header `{inc}` included by this kernel (as `{rel}`) {e}")));
                        return None;
                    }
                }
            }
            headers.sort_by(|a, b| a.0.cmp(&b.0));
            let entry = check_cuda_entry(cx, k, &text)?;
            Some(LoadedKernel {
                abs_path,
                bytes,
                headers,
                info: KernelInfo { entry, workgroup_size: [k.block.as_ref().map(|b| b.value).unwrap_or(256), 1, 1] },
            })
        }
    }
}

/// The parameter list text of `__global__ ... name(`, if found.
fn cuda_params(src: &str, name: &str) -> Option<Vec<String>> {
    let mut from = 0;
    while let Some(pos) = src[from..].find("__global__") {
        let start = from + pos;
        let rest = &src[start..];
        let open = rest.find('(')?;
        let head = &rest[..open];
        if head.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == name) {
            let close = rest[open..].find(')')? + open;
            let inner = rest[open + 1..close].trim();
            return Some(if inner.is_empty() || inner == "void" {
                Vec::new()
            } else {
                inner.split(',').map(|s| s.trim().to_string()).collect()
            });
        }
        from = start + 10;
    }
    None
}

fn global_names(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = src[from..].find("__global__") {
        let start = from + pos;
        if let Some(open) = src[start..].find('(') {
            if let Some(n) = src[start..start + open].split(|c: char| !c.is_alphanumeric() && c != '_').rfind(|w| !w.is_empty()) {
                out.push(n.to_string());
            }
        }
        from = start + 10;
    }
    out
}

fn check_cuda_entry(cx: &Ctxt, k: &SKernel, src: &str) -> Option<String> {
    let globals = global_names(src);
    let entry = match &k.entry {
        Some(e) => {
            if !globals.contains(&e.value()) {
                let found: Vec<String> = globals.iter().map(|g| format!("`{g}`")).collect();
                let found = if found.is_empty() { "none".to_string() } else { found.join(", ") };
                cx.error(syn::Error::new(
                    e.span(),
                    format!(
                        "CUDA kernel `{}` has no `__global__` function `{}` (found: {found}); set `entry` to one of them",
                        k.path.value(),
                        e.value()
                    ),
                ));
                return None;
            }
            e.value()
        }
        None if globals.len() == 1 => globals[0].clone(),
        None => {
            cx.error(syn::Error::new(
                k.path.span(),
                format!(
                    "CUDA kernel has {} `__global__` functions ({}); name one with `entry = \"...\"`",
                    globals.len(),
                    globals.join(", ")
                ),
            ));
            return None;
        }
    };
    let params = cuda_params(src, &entry).unwrap_or_default();
    let want: usize = k
        .bindings
        .iter()
        .map(|b| match b {
            SBinding::Buffer { .. } => 1,
            SBinding::Uniform { fields, .. } => fields.len(),
        })
        .sum();
    let anchor = k.bindings_span.unwrap_or(k.span);
    if params.len() != want {
        cx.error(anchor.error(format!(
            "CUDA kernel `{entry}` takes {} parameter(s) but the descriptor binds {want}; CUDA binds by parameter order, so list one slot per parameter in `bindings(...)` (each buffer, then each uniform field)",
            params.len()
        )));
        return Some(entry);
    }
    let mut i = 0;
    for b in &k.bindings {
        match b {
            SBinding::Buffer { name, access } => {
                let p = &params[i];
                if !p.contains('*') {
                    cx.error(syn::Error::new(
                        name.span(),
                        format!("`{name}` is a buffer but CUDA parameter {i} of `{entry}` is `{p}`, not a pointer"),
                    ));
                } else if access.value == Access::Read && !p.contains("const") {
                    cx.error(
                        access
                            .span
                            .error(format!("`{name}` is bound `read` but CUDA parameter {i} of `{entry}` is `{p}`; declare it `const`")),
                    );
                } else if access.value == Access::ReadWrite && p.trim_start().starts_with("const") && !p.contains("* const") {
                    cx.error(
                        access.span.error(format!("`{name}` is bound `read_write` but CUDA parameter {i} of `{entry}` is `{p}` (const)")),
                    );
                }
                i += 1;
            }
            SBinding::Uniform { fields, .. } => {
                for f in fields {
                    if params[i].contains('*') {
                        cx.error(syn::Error::new(f.span(), format!("uniform field `{f}` is a scalar but CUDA parameter {i} of `{entry}` is `{}`, a pointer; take it by value (e.g. `unsigned int {f}`)", params[i])));
                    }
                    i += 1;
                }
            }
        }
    }
    Some(entry)
}

#[cfg(test)]
mod tests {
    use crate::check::{check_tokens, Checked};
    use crate::model::OpAttr;
    use quote::quote;

    #[test]
    fn a_broken_descriptor_is_not_compared_with_its_source() {
        let dir = std::env::temp_dir().join(format!("op-spec-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
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
        assert_eq!(e, vec!["unknown access `write`; valid: read, read_write".to_string()]);
        let e = msgs(check_tokens(
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0),
            backward = none, kernel(wgsl = "nope.wgsl", bindings(x: read, out: read_write), threads = n)),
            item,
            &bases,
        ));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("kernel source `nope.wgsl` does not exist relative to the crate's Cargo.toml"), "{}", e[0]);
    }
}
