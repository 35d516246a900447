//! Unit tests of `op-core/src/registry/dispatch.rs` that need a built-in op (moved up to the floor that has them).

use crate::{add, sub};
use op_core::kind::BackendKind;
use op_core::op::{OpSource, RegisteredOp};
use op_core::registry::dispatch::CallOptions;
use op_core::registry::Registry;
use op_core::tensor::Tensor;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The interleaving a call racing a replacement can leave behind: a memo made in the old
/// generation, holding the old content, still in the slot after the new content and the
/// bumped generation. The next call must not reuse it.
#[test]
fn a_memo_from_an_earlier_generation_is_never_reused() {
    let r = Registry::with_backends(vec![Arc::new(op_backends::ReferenceBackend::default())]);
    let h = r.register(&add::DECL).unwrap();
    let (a, b) = (Tensor::vector(vec![5.0f32, 7.0]), Tensor::vector(vec![1.0f32, 2.0]));
    let run = || h.call_with(&[&a, &b], &[], CallOptions::on(BackendKind::Reference)).unwrap().outputs;
    assert_eq!(run()[0].as_slice::<f32>().unwrap(), &[6.0, 9.0]);
    assert!(h.slot.memo.get(&memo_key(&r, &h), &[&a, &b], &[]).is_some(), "the call was memoised");
    // Other content in the slot and a new generation, the memo left in place.
    *h.slot.entry.write().unwrap() = Arc::new(RegisteredOp::load_as(&sub::DECL, OpSource::Builtin).unwrap());
    r.inner.generation.fetch_add(1, Ordering::AcqRel);
    assert_eq!(run()[0].as_slice::<f32>().unwrap(), &[4.0, 5.0], "the slot's new content ran");
}

fn memo_key(r: &Registry, h: &op_core::registry::OpHandle) -> op_core::registry::memo::CallKey {
    let generation = r.inner.generation.load(Ordering::Acquire);
    op_core::registry::memo::CallKey { generation, strict: Some(BackendKind::Reference), pinned: h.member }
}
