//! The `#[op]` attribute. A thin wrapper: parsing, checking and the canonical encoding live in
//! `op-spec`; code generation in [`expand`](crate). Use it through `op_runtime::op`.

use proc_macro::TokenStream;

mod elems;
mod expand;
mod members;
mod plain;
mod shim;
mod tokens;

/// Declares a compute op: the annotated function is its **reference implementation**, the
/// attribute its **contract**. The contract is checked at compile time (errors point at the
/// offending token, and the function is always re-emitted so the IDE keeps it). One compile
/// reports every malformed entry, every malformed argument, constraint and output of
/// `signature(...)` (each parses on its own), and every rule broken by the parts that did parse;
/// a rule that needs a part that did not parse is skipped rather than reported as a follow-on.
/// The expansion is the function unchanged plus a hidden module of the same name holding
/// `DECL`, the op's static description, which `op_runtime` registers and dispatches like any
/// built-in. `DECL` is a `const` (`&my_op::DECL` is `&'static`): the typed call shims it names,
/// and the instantiations of the user's generic functions they make, are compiled where the op
/// is used (registered), as a generic function's are, not where it is declared.
///
/// # Example
///
/// ```
/// use op_runtime::{op, BackendKind, CallOptions, Real, Scalar, Tensor};
///
/// /// `x` scaled by `s`.
/// #[op(
///     name = "user/doc/scale", version = 1,
///     signature(x: f32[n], s: f32) -> f32[n],
///     category = elementwise, tolerance = ulp(1), nan = propagate,
///     backward = vjp(scale_vjp),
///     cpu = scale_cpu,
///     kernel(wgsl = "kernels/doc_scale.wgsl", bindings(x: read, out: read_write, uniform(n, s)), threads = n),
///     license = "MIT",
/// )]
/// pub fn scale<T: Real>(x: &[T], s: T) -> Vec<T> {
///     x.iter().map(|v| *v * s).collect()
/// }
///
/// /// The VJP: each cotangent times `s`.
/// pub fn scale_vjp<T: Real>(_x: &[T], s: T, g: &[T]) -> Vec<T> {
///     g.iter().map(|v| *v * s).collect()
/// }
///
/// /// A fast CPU kernel with the reference's signature at `f32`.
/// pub fn scale_cpu(x: &[f32], s: f32) -> Vec<f32> {
///     x.iter().map(|v| v * s).collect()
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Registered like any built-in and called through the same dispatch, which picks by
/// // priority (a hardware GPU's WGSL kernel, else the CPU kernel) or the backend you name.
/// let handle = op_runtime::register(&scale::DECL)?;
/// let x = Tensor::vector(vec![1.0f32, -2.0, 0.5]);
/// let out = handle.call(&[&x], &[Scalar::F32(2.0)])?;
/// assert_eq!(out.outputs[0].as_slice::<f32>(), Some(&[2.0f32, -4.0, 1.0][..]));
/// let on_cpu = handle.call_with(&[&x], &[Scalar::F32(2.0)], CallOptions::on(BackendKind::Cpu))?;
/// assert_eq!(on_cpu.provenance.backend, BackendKind::Cpu);
/// println!("{}", op_runtime::gradcheck(&scale::DECL)?); // the VJP against central differences
/// # Ok(())
/// # }
/// ```
///
/// The README declares a selection op (a windowed median) with a window parameter and a WGSL
/// kernel (the example in `examples/windowed_median` adds CUDA and `cpu` kernels); the section
/// "Every form, by example" below shows each form of the grammar in a doctest that runs.
///
/// # Grammar (EBNF)
///
/// ```text
/// attr        = entry { "," entry } [ "," ] ;
/// entry       = "name" "=" STRING                 (* "seg/seg/...": [a-z0-9_]+ segments *)
///             | "version" "=" INT                 (* >= 1 *)
///             | "signature" [ "<" dvar { "," dvar } ">" ] "(" [ arg { "," arg } ] ")" "->" outputs
///             | "category" "=" category
///             | "tolerance" "=" tolerance
///             | "signed_zero" "=" ( "exact" | "ignore" )   (* default exact; ignore: +0 == -0 *)
///             | "backward" "=" backward
///             | "subgradient" "=" STRING          (* required for kinked categories *)
///             | "nan" "=" ( "propagate" | "ordered" )   (* NaN in, NaN out; or, selection: NaN moved by total order *)
///             | "broadcast" "=" "numpy"           (* operands of any shapes that broadcast *)
///             | "domain" "(" interval { "," interval } ")"   (* values the op is defined on *)
///             | "magnitude" "(" range { "," range } ")"     (* |x| gradcheck draws from *)
///             | "cpu" "=" PATH                    (* optional fast CPU kernel, reference's signature *)
///             | "cpu" "(" PATH "," selection ")"  (* repeatable: one per instance, disjoint *)
///             | "output" "=" shape_class          (* default: static *)
///             | "kernel" "(" kernel_item { "," kernel_item } ")"   (* repeatable *)
///             | "license" "=" STRING              (* SPDX expression *)
///             | "visibility" "=" ( "private" | "workspace" | "public" )   (* default private *)
///             | "generated_tests" "=" ( "true" | "false" ) ;   (* default true *)
///
/// (* Grammar 1: shape signature *)
/// dvar        = IDENT ":" dtype { "|" dtype } ;  (* a dtype variable and its set: `T: f32 | f64` *)
/// arg         = IDENT ":" dtype [ "[" dims "]" ] [ "where" constraint { "," constraint } ] ;
///                                               (* with dims: a tensor; without: a scalar param *)
/// outputs     = output | "(" output { "," output } ")" ;
/// output      = [ IDENT ":" ] dtype "[" dims "]" ;   (* unnamed: `out`, or `out0`, `out1`, ... *)
/// dims        = [ expr { "," expr } ] ;          (* `[]` is a rank-0 tensor *)
/// dtype       = "bool" | "u8" | "i8" | "u16" | "i16" | "u32" | "i32" | "u64" | "i64"
///             | "f16" | "bf16" | "f32" | "f64"    (* packed sub-byte and fp8 are refused *)
///             | IDENT ;                          (* a dtype variable of `signature<...>` *)
/// constraint  = term cmp term { cmp term } ;     (* chains: `1 <= w <= 31` *)
/// term        = expr | [ "-" ] FLOAT ;           (* floats only in float constraints, below *)
/// cmp         = "<" | "<=" | "==" | "!=" | ">" | ">=" ;
/// expr        = term { ( "+" | "-" ) term } ;
/// term        = unary { ( "*" | "/" | "%" ) unary } ;
/// unary       = "-" unary | INT | IDENT | "(" expr ")" | ( "min" | "max" ) "(" expr "," expr ")" ;
/// shape_class = "static" | "bounded" "(" expr ")" | "dynamic" ;
/// interval    = bound { vcmp bound } ;           (* one input name, numbers: `x > 0`, `-1 <= y <= 1` *)
/// bound       = IDENT | [ "-" ] NUM ;
/// range       = IDENT ":" NUM ".." NUM ;         (* one float input, 0 < lo < hi: `x: 1e-3..10` *)
/// vcmp        = "<" | "<=" | ">" | ">=" ;
///
/// category    = "selection" | "integer" | "elementwise" | "transcendental"
///             | "reduction" | "contraction" | "approximate" ;
/// tolerance   = "exact" | "ulp" "(" INT ")" | "accum" "(" INT ")" | "loose" "(" NUM "," NUM ")" ;
///
/// (* Grammar 2: buffer-binding descriptor *)
/// kernel_item = ( "wgsl" | "cuda" ) "=" STRING    (* path relative to the crate's Cargo.toml *)
///             | "entry" "=" STRING                (* default: the only compute / __global__ fn *)
///             | "bindings" "(" slot { "," slot } ")"
///             | "threads" "=" extents             (* invocations to launch *)
///             | "block" "=" ( INT | "(" INT "," INT [ "," INT ] ")" )   (* CUDA threads per block, default 256 *)
///             | selection                         (* the instances served; default: all *)
///             | "limits" "(" limit { "," limit } ")" ;   (* WGSL: WebGPU limits above the defaults *)
/// selection   = "dtypes" "(" IDENT ":" dtype { "|" dtype } { "," IDENT ":" dtype { "|" dtype } } ")" ;
/// limit       = ( "max_compute_invocations_per_workgroup" | "max_compute_workgroup_size_x"
///               | "max_compute_workgroup_size_y" | "max_compute_workgroup_size_z" ) "=" INT ;
/// extents     = expr | "(" expr "," expr [ "," expr ] ")" ;   (* 1-D, or along x, y[, z] *)
/// slot        = IDENT ":" ( "read" | "read_write" | "accumulate" ) [ "as" IDENT ]   (* `as`: the kernel's name for it *)
///             | "uniform" "(" IDENT { "," IDENT } ")" ;
///
/// (* Grammar 3: backward representation *)
/// backward    = "none" | "composite" [ "(" PATH ")" ]
///             | vjp [ "+" "jvp" "(" PATH { "," PATH } ")" ]
///             | "jvp" "(" PATH { "," PATH } ")" [ "+" vjp ] ;
/// vjp         = "vjp" "(" PATH { "," vjp_kernel } ")" ;   (* the rule, then the VJP op's kernels *)
/// vjp_kernel  = "kernel" "(" kernel_item { "," kernel_item } ")"   (* a GPU kernel, repeatable *)
///             | "cpu" "=" PATH | "cpu" "(" PATH "," selection ")" ;  (* the rule's signature; as `cpu` above *)
/// ```
///
/// # Meaning
///
/// - **VJP kernels** (`backward = vjp(rule, kernel(...), ...)`) run the op's *VJP op*, registered
///   with the op as `<name>/vjp`: its arguments are the op's arguments followed by one cotangent
///   `d_<output>` per output (the output's dtype and dims), its outputs one gradient `d_<input>`
///   per float tensor input, its reference the rule. A VJP kernel binds those tensors (the
///   op's inputs and the cotangents `read`, the gradients `read_write`) and is checked like a
///   forward kernel against that signature (the very same checks: bindings, symbols, dtypes
///   served, uniform fields, launch geometry, one kernel per language per instance, every
///   gradient written); conformance compares it with the rule, and the tape
///   differentiates through it (on the device, for a tape on one). An argument may not already
///   be named like a derived tensor, and the op's outputs must have static shapes.
/// - **Symbols** are bound by appearing as a bare dim of an input (`x: f32[n]` binds `n`) or as
///   an integer parameter. Repeated symbols must agree at run time (`a: f32[m, k], b: f32[k, n]`).
///   Every other use of a symbol (output dims, constraints, `threads`, `uniform`) must be bound.
///   Division and `%` truncate toward zero.
/// - **Float constraints** compare float parameters and numbers, nothing else (`lo <= hi`,
///   `0 <= p <= 1`, `eps > 0`); a constraint compares either integers or floats. They are
///   checked for satisfiability in each parameter's own format (`eps == 0.1` on an `f32` never
///   holds) and stored apart in the contract (`float_constraints`).
/// - **Limits**: an attribute entry nests at most 64 groups, an expression at most 32 levels
///   (parentheses, unary `-`, `min`/`max`, operators: a chain of `k` terms nests `k - 1`) and
///   256 nodes, so the macro cannot exhaust its stack and the runtime reads every contract back.
/// - **Checks**, over the full range of every symbol (dims `0..=2^63-1`, parameters their
///   type's): constant-false, never-holding (`w % 2 == 2`) and contradictory (`n < m, m < n`)
///   constraints are errors; so are a division or `%` by a value that can be zero, output dims
///   and `bounded(e)` limits that can be negative, and `threads` that can be negative or zero
///   while an output is non-empty, each with a counterexample (`n - w + 1` needs `w <= n`). With `output = bounded(e)` or `dynamic`, output dims may use unbound
///   (data-dependent) symbols: each a whole output dim, one per output; the reference's
///   returned length decides it at run time (within `e` for `bounded`, equal across outputs).
///   Such ops are `backward = none`, declare no GPU kernel, run on host backends, and the tape
///   refuses them (it plans static shapes).
/// - **Category x tolerance**: `exact` only for `selection` and `integer` (and `selection` must
///   be `exact`); `reduction`/`contraction` need `accum(k)`; `loose` only for `approximate`.
///   `integer` ops have no float output; the rounding categories (and `ulp`, `accum`, `loose`)
///   need one; `nan = propagate` needs a float input and a float output; a backward needs a
///   float input and a float output.
/// - **Broadcasting**: `broadcast = numpy` declares an elementwise op whose every tensor is
///   `[n]` for one symbol (`signature(a: T[n], b: T[n]) -> T[n]`, two or more inputs): a call may
///   pass operands of any shapes that broadcast by numpy's rules (aligned at the last axis, each
///   axis equal or 1); they are expanded on the host to the broadcast shape, the op runs on them
///   flattened (`n` their element count, so kernels and conformance see equal lengths), and the
///   outputs have the broadcast shape. Shapes that do not broadcast are
///   `DispatchError::Broadcast`, naming both inputs and shapes; a device tensor that would need
///   expanding is `DispatchError::BroadcastOnDevice` (equal shapes of any rank run on the device
///   as they are). On the tape, the gradient of an expanded operand is the VJP's gradient summed
///   over the axes it was expanded along.
/// - **NaN policies**: `nan = propagate` (a NaN input gives NaN in the outputs it reaches;
///   conformance checks the reference for it) or `nan = ordered` (`selection` ops only: NaN is a
///   value ordered by IEEE total order and moved, so it reaches an output only where selected,
///   and every output NaN is bit for bit an input NaN; conformance checks that).
/// - **Values**: conformance compares by the tolerance class; `exact` is bit-identical, the sign
///   of zero and NaN payloads included, unless `signed_zero = ignore` (legal only with `exact`
///   and a float output), which compares by IEEE equality with NaN equal to NaN (a clamp built on
///   WGSL's `min`/`max`, which may return either zero). `domain(x > 0)` declares the interval of
///   a float input's values the op is defined on (`log`); conformance and gradcheck sample only
///   inside it, NaN included only where the op declares a NaN policy. Without a domain, every
///   float input gets NaN, infinities, subnormals and signed zeros. Each interval names a float
///   tensor input once. `magnitude(x: 1e-3..10)` declares the range of `|x|` an input is meant
///   for: gradcheck draws its values there (both signs, inside the domain) instead of its
///   default magnitudes, which narrow from 1e-3..1e3 where the outputs cannot resolve the
///   derivative; conformance ignores it. The range must meet the input's domain.
/// - **The reference** takes, in signature order, `&[E]` per tensor input and `E` per param,
///   then optionally `usize` params named after dim symbols (`m: usize`), and returns `Vec<E>`
///   (a tuple of `Vec`s for several outputs). Float ops should be generic over one type
///   parameter (`<T: Real>`): conformance runs it at the declared dtype, gradcheck in `f64`.
/// - **Bindings**: slot `i` of `bindings(...)` is WGSL `@group(0) @binding(i)` (CUDA: parameter
///   `i`, a uniform's fields each one scalar parameter). Inputs are `read`, outputs
///   `read_write` or `accumulate`, each tensor exactly once. An `accumulate` output is one the
///   kernel adds into: it starts at zero on every backend, in conformance too (only its guard
///   bands hold canaries), so elements the kernel never touches are zero, not a defect, and a
///   launch may have no threads; in WGSL it is `var<storage, read_write>`, for `u32`/`i32`
///   optionally `array<atomic<u32>>` / `array<atomic<i32>>`. (Plain calls zero-fill every
///   output; conformance fills `read_write` outputs with canaries.) `bf16` has no WGSL type: a
///   WGSL kernel binding a `bf16` tensor is a compile error (use a CUDA kernel). A WGSL kernel on
///   `f16` (`enable f16;`) runs where the adapter has `shader-f16` (the engine enables it); on a
///   device without it, dispatch refuses the op on wgpu before any work with
///   `BackendError::MissingFeature` naming `shader-f16`; the kernel's global (CUDA: parameter) carries the
///   tensor's name, or the one given with `as`, so swapped slots cannot compile. A tensor is a
///   runtime-sized `array<E>` of its element type; the uniform block's struct has one `u32` per
///   dim field and the parameter's type per param field, in order. Workgroup (shared) memory is
///   allowed. **2-D and 3-D launches**: `threads = (x, y)` or `(x, y, z)` launches
///   `ceil(extent / size)` workgroups (CUDA blocks) along each dimension of the entry's
///   `@workgroup_size(x, y[, z])` (CUDA `block = (x, y[, z])`, at most 1024 threads in all); a
///   workgroup or block has no more dimensions than the launch, and a kernel must read the y
///   (and, launched over three, the z) component of its invocation ids (WGSL: of
///   `global_invocation_id`, `workgroup_id` or `local_invocation_id`; CUDA: some `.y` read,
///   such as `blockIdx.y`), else the invocations along it repeat the same elements; each extent is checked like `threads` (symbols bound,
///   never negative).
///   **1-D launches**: a WGSL entry that indexes with the x
///   components only is launched flat, at most the device's workgroups per dimension (65,535:
///   4.2M invocations at 64); one that declares `@builtin(num_workgroups) nwg` and linearises
///   `let i = gid.x + gid.y * nwg.x * WG;` (or `(wid.x + wid.y * nwg.x) * WG + lid`) is launched
///   in rows of workgroups, any length the device's buffers allow. Reading the y or z
///   component of `global_invocation_id`/`workgroup_id` without `num_workgroups` is an error;
///   conformance launches such kernels in rows one workgroup wide, so a wrong row width fails
///   on small cases. WGSL
///   files are parsed and validated with naga at compile time and must match. A CUDA entry is
///   `extern "C" __global__ void`, each buffer a pointer to the element type (`const` when
///   read), each field `unsigned int` (dims) or the parameter's `int`/`unsigned int`/`float`;
///   where NVRTC loads at build time the kernel is compiled and its errors reported
///   (`OP_NVRTC=0` turns that off). A WGSL kernel may share helpers with others through a
///   comment directive on a line of its own, `// @include "lib/exp.wgsl"` (relative to the
///   kernel's directory): the checker and the runtime compile the expanded text, each file
///   included once, and the included files are the kernel's headers, like CUDA's `#include`s
///   (see `op_contract::wgsl_include`). Kernel files (headers too) enter the build through
///   `include_bytes!`, so editing one rebuilds. Paths are relative (never absolute) to the crate's `Cargo.toml` (if
///   absent there, to the declaring source file's directory) and stay inside the crate, after
///   `..` and symbolic links (headers too); each is resolved once, and the file the checker
///   reads is the file embedded. Every buffer bound `read_write` or `accumulate` is written by
///   the kernel (WGSL: a store the entry point reaches; CUDA: the parameter used beyond its
///   declaration). A WGSL workgroup stays within WebGPU's default limits (256 invocations; 256,
///   256 and 64 along x, y and z) unless the kernel declares the limits it needs with
///   `limits(max_compute_invocations_per_workgroup = 1024, ...)`; it then runs only on devices
///   that allow them (the runtime checks the device's limits before launching).
/// - **Backward rules** are type-checked where they are named: a VJP takes the reference's
///   parameters then one cotangent `&[T]` per output and returns one `Vec<T>` per float input
///   (a tuple for several); a JVP lists one rule per float input, each taking the reference's
///   parameters then that input's tangent `&[T]` and returning the output tangents.
///   `composite(graph)` names a builder of type `op_runtime::__private::CompositeFn`.
/// - **Identity**: blake3 over the canonical contract, the reference's tokens and every
///   kernel byte (CUDA `#include "..."` and WGSL `// @include "..."` headers too); see
///   `op_spec::canon`.
/// - **Generated tests**: each declaration gets two `#[test]`s, conformance of every kernel on
///   every available backend and gradcheck of the backward, and both demand success.
///   `generated_tests = false` generates none: a deliberately broken fixture declares it, and
///   its own test asserts the rejection with `op_runtime::testing::assert_conformance_rejected`,
///   `assert_reference_rejected` or `assert_gradcheck_rejected`. It is not part of the contract.
/// - The op must be declared at module level (the description lives in a sibling module of
///   the same name: `my_op::DECL`); on a method or in a function body it is an error.
/// - **The reference's element types** may be written through a type alias (`&[Elem]`): the
///   generated code type-checks it against the signature (a mismatch is an error on the name).
#[doc = include_str!("forms.md")]
#[proc_macro_attribute]
pub fn op(attr: TokenStream, item: TokenStream) -> TokenStream {
    // Kernel paths resolve against the crate's Cargo.toml, then the declaring file's directory;
    // the attribute's position lets the checker tell whether the op is at module level.
    let site = proc_macro::Span::call_site();
    let file = site.local_file();
    let source_dir = file.as_ref().and_then(|f| f.parent().map(|p| p.to_path_buf()));
    let location = file.map(|file| op_spec::check::Location { file, line: site.line(), column: site.column() });
    expand::expand(attr.into(), item.into(), source_dir, location).into()
}

#[cfg(test)]
mod grammar_tests {
    use op_spec::contract::{Category, DType};
    use op_spec::parse::keys;

    /// The macro's doc comment as written in this file (its `///` lines and attributes).
    fn doc_comment() -> &'static str {
        let lib = include_str!("lib.rs");
        let start = lib.find("/// Declares a compute op").expect("the op doc");
        let end = lib.find("#[proc_macro_attribute]").expect("the op fn");
        &lib[start..end]
    }

    /// The macro's doc comment, grammar and forms, as written in the source.
    fn doc() -> String {
        doc_comment().to_string() + include_str!("forms.md")
    }

    /// The macro's docs as rustdoc reads them: the `///` lines without their prefix, then
    /// the forms (`#[doc = include_str!("forms.md")]`).
    fn doc_text() -> String {
        let lines = doc_comment().lines().filter_map(|l| l.trim_start().strip_prefix("///"));
        let mut text: String = lines.map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l))).collect();
        text.push_str(include_str!("forms.md"));
        text
    }

    /// The code of every fenced block of `doc` that rustdoc compiles and runs (info string
    /// empty or `rust`); blocks in other languages (`text`) are skipped. A Rust block marked
    /// `ignore`, `no_run`, `compile_fail` or `should_panic` is an error: it does not show that
    /// its form runs.
    fn doctests(doc: &str) -> Result<Vec<String>, String> {
        let mut blocks = Vec::new();
        let mut open: Option<(bool, String)> = None;
        for line in doc.lines() {
            let Some(info) = line.trim_start().strip_prefix("```") else {
                if let Some((_, code)) = open.as_mut() {
                    code.push_str(line);
                    code.push('\n');
                }
                continue;
            };
            if let Some((runs, code)) = open.take() {
                if runs {
                    blocks.push(code);
                }
                continue;
            }
            let words: Vec<&str> = info.split([',', ' ']).map(str::trim).filter(|w| !w.is_empty()).collect();
            if let Some(w) = words.iter().find(|w| ["ignore", "no_run", "compile_fail", "should_panic"].contains(w)) {
                return Err(format!("a doctest marked `{w}` (```{info}): every example must compile and run"));
            }
            let runs = words.iter().all(|w| *w == "rust" || w.starts_with("edition"));
            open = Some((runs, String::new()));
        }
        Ok(blocks)
    }

    /// The arguments of every `#[op(...)]` in `code`, whitespace collapsed to single spaces.
    fn op_attrs(code: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = code;
        while let Some(at) = rest.find("#[op(") {
            let body = &rest[at + "#[op(".len()..];
            let (mut depth, mut in_str, mut end) = (1usize, false, body.len());
            for (i, c) in body.char_indices() {
                match c {
                    '"' => in_str = !in_str,
                    '(' if !in_str => depth += 1,
                    ')' if !in_str => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = i;
                    break;
                }
            }
            out.push(body[..end].split_whitespace().collect::<Vec<_>>().join(" "));
            rest = &body[end..];
        }
        out
    }

    /// The forms no `#[op(...)]` of `attrs` shows, by what the grammar calls them.
    fn missing_forms(attrs: &[String]) -> Vec<String> {
        let has = |snippet: &str| attrs.iter().any(|a| a.contains(snippet));
        let mut missing: Vec<String> = Vec::new();
        // Every key of an entry and of `kernel(...)`, followed by what it takes.
        for k in keys::ALL.iter().chain(keys::KERNEL_KEYS.iter()) {
            if !["=", "(", "<"].iter().any(|after| has(&format!("{k} {after}")) || has(&format!("{k}{after}"))) {
                missing.push(format!("the key `{k}`"));
            }
        }
        for (_, name) in Category::ALL {
            if !has(&format!("category = {name}")) {
                missing.push(format!("`category = {name}`"));
            }
        }
        // Every dtype, as a dtype: of a tensor, a parameter, or a variable's set.
        for d in DType::ALL.map(DType::name) {
            let as_dtype =
                [format!(": {d}["), format!(": {d},"), format!(": {d})"), format!("| {d}"), format!(": {d} |"), format!("-> {d}[")];
            if !as_dtype.iter().any(|p| has(p)) {
                missing.push(format!("the dtype `{d}`"));
            }
        }
        for (limit, _) in op_spec::wgsl::DEFAULT_LIMITS {
            if !has(&format!("{limit} = ")) {
                missing.push(format!("the limit `{limit}`"));
            }
        }
        missing.extend(FORMS.iter().filter(|(_, snippet)| !has(snippet)).map(|(form, snippet)| format!("{form} (`{snippet}`)")));
        missing
    }

    /// Each alternative of the grammar beyond a key's name, and an example of it in the forms.
    const FORMS: &[(&str, &str)] = &[
        ("dtype variables", "signature<T: "),
        ("several dtype variables", "signature<T: f32 | f64, I: u32 | u64>"),
        ("a scalar parameter", "s: f32"),
        ("an unnamed output", ") -> f32[n],"),
        ("several outputs, named", "-> (sq: f32[n], cube: f32[n])"),
        ("a rank-0 output", "-> f32[]"),
        ("a 2-D tensor", "f32[m, n]"),
        ("a 3-D tensor", "T[b, m, n]"),
        ("a constraint", "where"),
        ("a chain", "1 <= bins <= 4096"),
        ("a chain with `<` and a negative number", "-64 < step < 64"),
        ("`!=`", "step != 0"),
        ("`%` and `==`", "n % 2 == 0"),
        ("`>`", "k > 0"),
        ("`>=`", "n >= 1"),
        ("`*` and `min`", "min(n, 2 * k)"),
        ("`max`, unary `-`, parentheses and `/`", "(n + max(step, -step) - 1) / max(step, -step)"),
        ("a float constraint", "where lo <= hi"),
        ("a float constraint with a number", "0.0 < c"),
        ("`tolerance = exact`", "tolerance = exact"),
        ("`tolerance = ulp(k)`", "tolerance = ulp("),
        ("`tolerance = accum(k)`", "tolerance = accum("),
        ("`tolerance = loose(rtol, atol)`", "tolerance = loose("),
        ("`signed_zero = exact`", "signed_zero = exact"),
        ("`signed_zero = ignore`", "signed_zero = ignore"),
        ("`nan = propagate`", "nan = propagate"),
        ("`nan = ordered`", "nan = ordered"),
        ("`broadcast = numpy`", "broadcast = numpy"),
        ("a domain bound", "domain(x > -1)"),
        ("a domain chain", "domain(-10 <= x <= 10)"),
        ("a magnitude range", "magnitude(x: 1e-3..10)"),
        ("`output = static`", "output = static"),
        ("`output = bounded(e)`", "output = bounded("),
        ("`output = dynamic`", "output = dynamic"),
        ("`visibility = private`", "visibility = private"),
        ("`visibility = workspace`", "visibility = workspace"),
        ("`visibility = public`", "visibility = public"),
        ("`generated_tests = true`", "generated_tests = true"),
        ("`generated_tests = false`", "generated_tests = false"),
        ("`backward = none`", "backward = none"),
        ("`backward = composite`", "backward = composite,"),
        ("`backward = composite(path)`", "backward = composite(dot_graph)"),
        ("`backward = vjp(path)`", "backward = vjp("),
        ("`backward = jvp(path)`", "backward = jvp("),
        ("`vjp(...) + jvp(...)`", ") + jvp(mul_jvp_a, mul_jvp_b)"),
        ("`jvp(...) + vjp(...)`", ") + vjp(scaled_square_vjp"),
        ("a VJP kernel", "vjp(triple_vjp, kernel(wgsl = "),
        ("a VJP `cpu = path`", "vjp(mul_vjp, cpu = mul_vjp_cpu)"),
        ("a VJP `cpu(path, dtypes(...))`", "cpu(scaled_square_vjp_f32, dtypes(T: f32))"),
        ("`cpu = path`", "cpu = "),
        ("`cpu(path, dtypes(...))`", "cpu(cube_f32, dtypes(T: f32))"),
        ("a WGSL kernel", "kernel(wgsl = \""),
        ("a CUDA kernel", "kernel(cuda = \""),
        ("`entry`", "entry = \""),
        ("a `read` slot", ": read,"),
        ("a `read_write` slot", ": read_write"),
        ("an `accumulate` slot with `as`", "out: accumulate as counts"),
        ("a uniform block", "uniform("),
        ("1-D `threads`", "threads = n"),
        ("2-D `threads`", "threads = (n, m)"),
        ("3-D `threads`", "threads = (n, m, b)"),
        ("`block = INT`", "block = 256"),
        ("2-D `block`", "block = (16, 16)"),
        ("3-D `block`", "block = (8, 8, 4)"),
        ("a kernel's `dtypes(...)` of one variable", "dtypes(T: f32 | f64), bindings("),
        ("a kernel's `dtypes(...)` of several variables", "dtypes(T: f32, I: u32), bindings("),
        ("`limits(...)`", "limits("),
        ("`subgradient`", "subgradient = \""),
        ("`license`", "license = \""),
    ];

    /// The grammar is written once, on the macro: every key the parser accepts appears in it
    /// as a quoted terminal, and every form has a runnable example.
    #[test]
    fn the_grammar_names_every_key_the_parser_accepts() {
        let doc = doc();
        let quoted = |k: &str| doc.contains(&format!("\"{k}\""));
        let missing: Vec<&str> = keys::ALL.iter().chain(keys::KERNEL_KEYS.iter()).copied().filter(|k| !quoted(k)).collect();
        assert!(missing.is_empty(), "keys the parser accepts but the grammar does not show: {missing:?}");
        assert!(!quoted("no_such_key"), "the check can fail");
        // Shown by kernel files, which the prose names.
        assert!(doc.contains("// @include"), "no example of `// @include` on the macro");
    }

    /// Every form of the grammar (every key, category, dtype, limit and alternative) appears in
    /// an `#[op(...)]` of a doctest that rustdoc compiles and runs, and no example is marked
    /// `ignore`, `no_run`, `compile_fail` or `should_panic`: a form that loses its running
    /// example fails here.
    #[test]
    fn every_form_has_a_doctest_that_runs() {
        let blocks = doctests(&doc_text()).unwrap_or_else(|e| panic!("{e}"));
        assert!(blocks.len() >= 10, "only {} doctests found on the macro", blocks.len());
        let attrs: Vec<String> = blocks.iter().flat_map(|b| op_attrs(b)).collect();
        let missing = missing_forms(&attrs);
        assert!(missing.is_empty(), "forms with no running doctest on the macro:\n  {}", missing.join("\n  "));
    }

    /// The check reads only running Rust blocks: a form shown only in a `text` block, or only
    /// in prose, is missing; a block marked not to run is an error; the attribute ends at its
    /// closing parenthesis, not at one inside a string.
    #[test]
    fn the_form_check_can_fail() {
        let doc = "```text\n#[op(nan = ordered)]\n```\nprose: #[op(output = dynamic)]\n```rust\n#[op(nan = propagate, subgradient = \"(\")]\nfn f() {}\n```\n";
        let blocks = doctests(doc).expect("no block marked");
        assert_eq!(blocks.len(), 1);
        let attrs: Vec<String> = blocks.iter().flat_map(|b| op_attrs(b)).collect();
        assert_eq!(attrs, ["nan = propagate, subgradient = \"(\""]);
        let missing = missing_forms(&attrs);
        assert!(missing.iter().any(|m| m.starts_with("`nan = ordered`")), "{missing:?}");
        assert!(missing.iter().any(|m| m.starts_with("`output = dynamic`")), "{missing:?}");
        assert!(!missing.iter().any(|m| m.starts_with("`nan = propagate`")), "{missing:?}");
        for marked in ["```ignore", "```rust,no_run", "```compile_fail", "```rust, should_panic"] {
            let e = doctests(&format!("{marked}\nfn main() {{}}\n```\n")).expect_err(marked);
            assert!(e.contains("every example must compile and run"), "{e}");
        }
    }
}
