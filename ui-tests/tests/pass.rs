//! The `#[op]` declarations that must compile and run: each file of `pass/` is a module of this
//! test binary (`harness = false`: its `main` is this file's) and its `main` runs here, in the
//! order below. One binary built with the workspace's dependencies, where trybuild would build
//! every pass case as a crate of its own in a target directory of its own (its dependencies
//! built a second time, then a `cargo clean` and a `cargo build` per file). The fail cases stay
//! with trybuild (`tests/ui.rs`). A file in `pass/` that is not listed here fails the run.

#[path = "../pass/binding_global_alias.rs"]
mod binding_global_alias;
#[path = "../pass/bounded_output.rs"]
mod bounded_output;
#[path = "../pass/cpu_kernels_per_instance.rs"]
mod cpu_kernels_per_instance;
#[path = "../pass/cuda_kernel.rs"]
mod cuda_kernel;
#[path = "../pass/declared_in_macro_rules.rs"]
#[rustfmt::skip] // rustfmt indents the attribute inside its macro_rules further at every run
mod declared_in_macro_rules;
#[path = "../pass/doc_comment_unicode_indent.rs"]
mod doc_comment_unicode_indent;
#[path = "../pass/dtype_generic.rs"]
mod dtype_generic;
#[path = "../pass/f16_generic_real.rs"]
mod f16_generic_real;
#[path = "../pass/float_constraints.rs"]
mod float_constraints;
#[path = "../pass/integer_backward_none.rs"]
mod integer_backward_none;
#[path = "../pass/jvp_rules.rs"]
mod jvp_rules;
#[path = "../pass/kernel_limits.rs"]
mod kernel_limits;
#[path = "../pass/matmul_usize_dims.rs"]
mod matmul_usize_dims;
#[path = "../pass/multi_output.rs"]
mod multi_output;
#[path = "../pass/public_op.rs"]
mod public_op;
#[path = "../pass/type_alias_element.rs"]
mod type_alias_element;
#[path = "../pass/values.rs"]
mod values;
#[path = "../pass/vjp_and_jvp.rs"]
mod vjp_and_jvp;
#[path = "../pass/vjp_kernels.rs"]
mod vjp_kernels;
#[path = "../pass/windowed_median.rs"]
mod windowed_median;

/// Each case's name (its file in `pass/`) and its `main`.
const CASES: &[(&str, fn())] = &[
    ("binding_global_alias", binding_global_alias::main),
    ("bounded_output", bounded_output::main),
    ("cpu_kernels_per_instance", cpu_kernels_per_instance::main),
    ("cuda_kernel", cuda_kernel::main),
    ("declared_in_macro_rules", declared_in_macro_rules::main),
    ("doc_comment_unicode_indent", doc_comment_unicode_indent::main),
    ("dtype_generic", dtype_generic::main),
    ("f16_generic_real", f16_generic_real::main),
    ("float_constraints", float_constraints::main),
    ("integer_backward_none", integer_backward_none::main),
    ("jvp_rules", jvp_rules::main),
    ("kernel_limits", kernel_limits::main),
    ("matmul_usize_dims", matmul_usize_dims::main),
    ("multi_output", multi_output::main),
    ("public_op", public_op::main),
    ("type_alias_element", type_alias_element::main),
    ("values", values::main),
    ("vjp_and_jvp", vjp_and_jvp::main),
    ("vjp_kernels", vjp_kernels::main),
    ("windowed_median", windowed_median::main),
];

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pass");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|f| f.strip_suffix(".rs").map(str::to_string))
        .collect();
    files.sort();
    let listed: Vec<&str> = CASES.iter().map(|(n, _)| *n).collect();
    assert_eq!(files, listed, "every file of pass/ must be a module of tests/pass.rs, and only those");
    for (name, case) in CASES {
        print!("pass/{name}.rs ... ");
        case();
        println!("ok");
    }
    println!("{} pass cases compiled and ran", CASES.len());
}
