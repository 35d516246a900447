//! Registry: identity, idempotent and concurrent registration, conflicting content, verified
//! replacement, deterministic names across processes.

use op_runtime::RegistrationError;
use op_runtime::{op, BackendKind, CallOptions, Real, Registry, Scalar, Tensor};
use std::sync::Arc;

/// Version A of a user op.
#[op(name = "test/registry/affine", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none)]
pub fn affine_a<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(2.0) + T::one()).collect()
}

/// Same name and version, different body: changed content.
#[op(name = "test/registry/affine", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none)]
pub fn affine_b<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(3.0) + T::one()).collect()
}

/// The fix the error suggests: a new version.
#[op(name = "test/registry/affine", version = 2, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none)]
pub fn affine_v2<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(3.0) + T::one()).collect()
}

fn x() -> Tensor {
    Tensor::vector(vec![1.0f32, 2.0, 3.0])
}

fn run(h: &op_runtime::OpHandle) -> Vec<f32> {
    h.call_with(&[&x()], &[], CallOptions::on(BackendKind::Reference)).unwrap().outputs[0].as_slice::<f32>().unwrap().to_vec()
}

#[test]
fn identical_content_is_an_idempotent_no_op() {
    let r = Registry::new();
    let h1 = r.register(&affine_a::DECL).unwrap();
    let h2 = r.register(&affine_a::DECL).unwrap();
    assert_eq!(h1.op().hash(), h2.op().hash());
    assert!(Arc::ptr_eq(&h1.op(), &h2.op()), "the same registered entry is returned");
    assert_eq!(r.ops().len(), 1);
}

#[test]
fn changed_content_under_same_name_and_version_is_refused_naming_both_remedies() {
    let r = Registry::new();
    r.register(&affine_a::DECL).unwrap();
    let e = r.register(&affine_b::DECL).unwrap_err();
    assert!(matches!(e, RegistrationError::ContentChanged { .. }));
    let msg = e.to_string();
    assert!(msg.contains("test/registry/affine@1"), "{msg}");
    assert!(msg.contains("bump the version"), "{msg}");
    assert!(msg.contains("under a new name"), "{msg}");
    // Both declaration sites are named (file and line of each `#[op]`).
    assert!(msg.contains("declared at tests/runtime_registry.rs:9") && msg.contains("this one at tests/runtime_registry.rs:16"), "{msg}");
    // The old content still runs; a new version registers alongside.
    assert_eq!(run(&r.lookup("test/registry/affine@1").unwrap()), vec![3.0, 5.0, 7.0]);
    r.register(&affine_v2::DECL).unwrap();
    assert_eq!(r.lookup("test/registry/affine").unwrap().id(), "test/registry/affine@2");
}

#[test]
fn replace_is_verified_by_the_very_next_call_through_an_old_handle() {
    let r = Registry::new();
    let old = r.register(&affine_a::DECL).unwrap();
    assert_eq!(run(&old), vec![3.0, 5.0, 7.0]);
    let new = r.replace(&affine_b::DECL).unwrap();
    assert_eq!(*new.op().hash(), affine_b::DECL.identity());
    // The handle obtained before the replacement runs the new content on its next call.
    assert_eq!(run(&old), vec![4.0, 7.0, 10.0]);
    assert_eq!(*old.op().hash(), affine_b::DECL.identity());
    // Replacing something never registered is refused.
    let e = Registry::new().replace(&affine_b::DECL).unwrap_err();
    assert!(matches!(e, RegistrationError::NotRegistered { .. }), "{e}");
}

#[test]
fn eight_threads_registering_at_once_lose_nothing() {
    let r = Registry::new();
    let decls = op_runtime::builtins::decls();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (r, decls) = (r.clone(), decls.clone());
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for k in 0..decls.len() {
                    let d = decls[(k + t) % decls.len()];
                    ids.push(r.register(d).map(|h| h.id()).unwrap());
                }
                r.register(&affine_a::DECL).unwrap();
                ids
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().len(), decls.len());
    }
    // Every declaration once, and the VJP op of each whose backward declares VJP kernels.
    let vjp_ops = r.ops().iter().filter(|o| o.is_vjp_op()).count();
    assert_eq!(r.ops().len() - vjp_ops, decls.len() + 1);
    assert_eq!(vjp_ops, r.ops().iter().filter(|o| !o.contract().vjp_kernels().is_empty()).count());
    for d in decls {
        let op = op_runtime::RegisteredOp::load(d).unwrap();
        assert_eq!(r.lookup(op.id()).unwrap().op().hash(), op.hash());
    }
}

#[test]
fn builtin_and_user_ops_share_one_registration_path() {
    let r = Registry::with_builtins();
    assert!(r.ops().len() >= 15);
    let user = r.register(&affine_a::DECL).unwrap();
    assert_eq!(user.op().source(), op_runtime::OpSource::User);
    assert_eq!(r.lookup("builtin/add").unwrap().op().source(), op_runtime::OpSource::Builtin);
}

const NAMES_ENV: &str = "OP_TEST_PRINT_NAMES";

fn names() -> String {
    let r = Registry::with_builtins();
    let h = r.register(&affine_a::DECL).unwrap();
    let mut out = Vec::new();
    for op in r.ops().iter().chain(std::iter::once(&h.op())) {
        out.push(format!("{} {} {} {}", op.id(), op.kernel_name(), op.pipeline_name(), op.cache_key(BackendKind::Wgpu)));
    }
    out.join("\n")
}

#[test]
fn names_are_identical_in_a_second_process() {
    if std::env::var_os(NAMES_ENV).is_some() {
        println!("<<<{}>>>", names());
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["names_are_identical_in_a_second_process", "--exact", "--nocapture", "--test-threads=1"])
        .env(NAMES_ENV, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find("<<<").expect("child printed its names") + 3;
    let end = text.find(">>>").unwrap();
    let child = &text[start..end];
    assert_eq!(child, names());
    assert!(child.contains("op_"), "{child}");
}

#[test]
fn a_registered_op_runs_and_rejects_a_bad_parameter_type() {
    let r = Registry::with_builtins();
    let scale = r.lookup("builtin/scale").unwrap();
    let out = scale.call_with(&[&x()], &[Scalar::F32(0.5)], CallOptions::on(BackendKind::Reference)).unwrap();
    assert_eq!(out.outputs[0].as_slice::<f32>().unwrap(), &[0.5, 1.0, 1.5]);
    let e = scale.call_with(&[&x()], &[Scalar::U32(2)], CallOptions::on(BackendKind::Reference)).unwrap_err();
    assert!(e.to_string().contains("parameter `s` must be `f32`, got `u32`"), "{e}");
}

/// `affine_a`'s description with its contract JSON rewritten by `edit`, the identity recomputed
/// so the only defect is the one `edit` introduces (as a hand-built description would have).
fn hand_built(edit: impl Fn(&mut serde_json::Value)) -> &'static op_runtime::OpDecl {
    let d = &affine_a::DECL;
    let mut v: serde_json::Value = serde_json::from_str(d.contract_json).unwrap();
    edit(&mut v);
    let json: &'static str = Box::leak(v.to_string().into_boxed_str());
    let hash = op_contract::identity::identity(json, d.body_tokens, &[]);
    Box::leak(Box::new(op_runtime::OpDecl { contract_json: json, hash, ..*d }))
}

#[test]
fn a_hand_built_description_is_validated_field_by_field_never_a_panic() {
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: [(&str, Edit); 4] = [
        ("constraint 0 has 0 term(s)", Box::new(|v| v["signature"]["constraints"] = serde_json::json!([{ "terms": [], "ops": [] }]))),
        ("declares no output", Box::new(|v| v["signature"]["outputs"] = serde_json::json!([]))),
        ("version 0", Box::new(|v| v["version"] = serde_json::json!(0))),
        (
            "kernel(s) but 0 are embedded",
            Box::new(
                |v| v["kernels"] = serde_json::json!([{ "lang": "wgsl", "path": "k.wgsl", "entry": "main", "bindings": [], "threads": { "Lit": 1 }, "block": null }]),
            ),
        ),
    ];
    for (want, edit) in cases {
        let decl = hand_built(edit);
        match Registry::new().register(decl) {
            Err(e @ RegistrationError::BadContract { .. }) => assert!(e.to_string().contains(want), "{e}"),
            other => panic!("expected BadContract containing {want:?}, got {other:?}"),
        }
    }
    // The untouched description still registers (the edits above are what is refused).
    assert!(Registry::new().register(hand_built(|_| {})).is_ok());
}
