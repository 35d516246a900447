//! Unit tests of `op-core/src/registry/mod.rs` that need a built-in op (moved up to the floor that has them).

use op_core::decl::OpDecl;
use op_core::error::RegistrationError;
use op_core::registry::*;
use std::sync::Arc;

/// A copy of a built-in's declaration with another function name, site or module.
fn copy(edit: impl FnOnce(&mut OpDecl)) -> &'static OpDecl {
    let mut d = OpDecl { ..crate::add::DECL };
    edit(&mut d);
    Box::leak(Box::new(d))
}

#[test]
fn one_identity_from_two_items_is_refused_naming_both_and_one_item_twice_is_not() {
    let r = Registry::with_backends(Vec::new());
    let first = r.register(&crate::add::DECL).expect("registers");
    // The same item again, through the const or a copy of it (another crate's use): the slot.
    for again in [&crate::add::DECL, copy(|_| {})] {
        let h = r.register(again).expect("the same item registers again");
        assert!(Arc::ptr_eq(&h.slot, &first.slot));
    }
    // Another function, site or module with the same identity: refused, both named.
    for (what, other) in [
        ("function", copy(|d| d.rust_name = "add_twin")),
        ("site", copy(|d| d.site = "src/elsewhere.rs:7")),
        ("crate", copy(|d| d.module = "other_crate::elementwise::add")),
    ] {
        match r.register(other) {
            Err(e @ RegistrationError::SameIdentityOtherItem { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(crate::add::DECL.site) && msg.contains(other.site), "{what}: {msg}");
                assert!(msg.contains(&item_path(other)) && msg.contains(&item_path(&crate::add::DECL)), "{what}: {msg}");
            }
            other => panic!("{what}: expected SameIdentityOtherItem, got {other:?}"),
        }
    }
}
