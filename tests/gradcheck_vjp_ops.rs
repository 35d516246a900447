//! Second order across seeds: every built-in's VJP op (the op that differentiates through a
//! backward, `op_runtime::builtins::vjp_decls`) with a differentiable rule of its own passes
//! gradcheck at many seeds, each with its negative control rejected. The seeds come from the
//! ops' identities, which move with any edit of the runtime, so a rule accused at one seed in
//! fifty (a cancelling sum's rounding, an overflow in a product) shows here rather than after
//! some unrelated change; `gradcheck_builtins` holds the built-ins' own VJPs to the same.

use op_runtime::builtins;
use op_runtime::gradcheck::{gradcheck_with, GradcheckOptions};

#[test]
fn every_vjp_op_passes_at_many_seeds_with_its_negative_control() {
    let differentiable = |d: &&'static op_runtime::OpDecl| {
        let op = op_runtime::Registry::new().register(d).expect("a VJP op registers").op();
        op.contract().backward != op_runtime::contract::Backward::None
    };
    let decls: Vec<_> = builtins::vjp_decls().into_iter().map(|(_, d)| d).filter(differentiable).collect();
    assert!(decls.len() >= 30, "only {} differentiable VJP ops", decls.len());
    for d in decls {
        for salt in 0..16u64 {
            let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
            let r = gradcheck_with(op_runtime::registry(), d, &o).unwrap_or_else(|e| panic!("{} (salt {salt}): {e}", d.rust_name));
            assert!(r.negative_control.iter().all(|c| !c.applicable || c.rejected), "{} (salt {salt}): {r}", d.rust_name);
        }
    }
}
