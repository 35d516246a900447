//! Unit tests of `op-core/src/shim.rs` that need a built-in op (moved up to the floor that has them).

use op_core::decl::Call;
use op_core::decl::ShimFn;
use op_core::error::ShimError;
use op_core::op::OpSource;
use op_core::op::RegisteredOp;
use op_core::shim::*;
use op_core::tensor::Tensor;

fn nothing(_: &mut Call<'_>) -> Result<(), ShimError> {
    Ok(())
}
fn second_only(c: &mut Call<'_>) -> Result<(), ShimError> {
    c.set_output(1, vec![0.0f32; 2])
}
fn twice(c: &mut Call<'_>) -> Result<(), ShimError> {
    c.set_output(0, vec![1.0f32, 2.0])?;
    c.set_output(0, vec![3.0f32, 4.0])
}
fn panics(_: &mut Call<'_>) -> Result<(), ShimError> {
    panic!("boom")
}

/// The runner reports an output the shim never stored, an output the op does not declare
/// and a panic, each as an error naming the op; a stored output comes back in place.
#[test]
fn missing_undeclared_and_panicking_shims_are_errors_naming_the_op() {
    let op = RegisteredOp::load_as(&crate::add::DECL, OpSource::Builtin).unwrap();
    let (a, b) = (Tensor::vector(vec![1.0f32, 2.0]), Tensor::vector(vec![3.0f32, 4.0]));
    let inputs = [&a, &b];
    let bound = op.plan.validate(&inputs, &[], None).unwrap();
    let run = |shim: ShimFn| run(&op, shim, &inputs, &[], &bound, Rule::Forward);
    assert_eq!(run(nothing).unwrap_err().0, "op `builtin/add@1`: output 0 was not produced");
    assert_eq!(run(second_only).unwrap_err().0, "op `builtin/add@1`: no output 1");
    assert_eq!(run(panics).unwrap_err().0, "op `builtin/add@1`: the function panicked: boom");
    let out = run(twice).unwrap();
    assert_eq!((out.len(), out[0].as_slice::<f32>().unwrap()), (1, &[3.0f32, 4.0][..]), "the last store wins");
    assert_eq!(run(op.shims.reference).unwrap()[0].as_slice::<f32>().unwrap(), &[4.0, 6.0]);
}
