//! Sharing: cards show source, licence, tolerance, kernels, receipts and trust (verified only by
//! a receipt for this content and this device); the store refuses private and unlicensed ops,
//! round-trips published ones, and refuses tampered blobs naming the op and the file.

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::core::decl::OpDecl;
use op_runtime::core::device::DeviceProfile;
use op_runtime::core::op::OpSource;
use op_runtime::core::op::RegisteredOp;
use op_runtime::core::receipt::Receipt;
use op_runtime::verify::conformance::conform;
use op_runtime::verify::sharing::{blob_hash, OpCard, SharingError, Store, Trust};
use op_runtime::{op, BackendKind, OpHandle, Real, Registry};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Windowed median shared with the workspace: the example's reference and kernels (the CUDA one
/// `#include`s a header), licensed so it may leave private.
#[op(
    name = "test/sharing/median", version = 1,
    signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
    category = selection, tolerance = exact, backward = none,
    kernel(wgsl = "kernels/windowed_median.wgsl",
           bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1),
    kernel(cuda = "kernels/windowed_median.cu",
           bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1, block = 128),
    license = "MIT", visibility = workspace,
)]
pub fn shared_median<T: Real>(x: &[T], w: u32) -> Vec<T> {
    median::windowed_median(x, w)
}

/// Doubles every element.
#[op(name = "test/sharing/double", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none, license = "Apache-2.0", visibility = public)]
pub fn double_a<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(2.0)).collect()
}

/// Same name and version as `double_a`, different body: changed content.
#[op(name = "test/sharing/double", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none, license = "Apache-2.0", visibility = public)]
pub fn double_b<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

#[op(name = "test/sharing/undocumented", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none, license = "MIT", visibility = workspace)]
pub fn undocumented<T: Real>(x: &[T]) -> Vec<T> {
    x.to_vec()
}

/// A store in a unique temp directory, removed on drop.
struct TempStore {
    dir: PathBuf,
    store: Store,
}

impl TempStore {
    fn new(tag: &str) -> TempStore {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!("op-sharing-{}-{tag}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
        let _ = std::fs::remove_dir_all(&dir);
        TempStore { store: Store::open(&dir), dir }
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn handle(decl: &'static OpDecl) -> OpHandle {
    Registry::new().register(decl).expect("registers")
}

fn host() -> DeviceProfile {
    DeviceProfile::host("reference")
}

fn reference_receipt(h: &OpHandle) -> Receipt {
    conform(h, BackendKind::Reference).expect("the reference conforms to itself")
}

/// The built-in `add` as the built-in registration path loads it (source: builtin).
fn builtin_add() -> std::sync::Arc<RegisteredOp> {
    op_runtime::registry().lookup("builtin/add").expect("builtin/add exists").op()
}

/// Appends a byte to a file (a tamper that keeps it readable).
fn tamper(path: &Path) {
    let mut bytes = std::fs::read(path).expect("blob exists");
    bytes.extend_from_slice(b" ");
    std::fs::write(path, bytes).expect("tampered");
}

#[test]
fn the_private_example_median_is_refused_with_a_typed_error() {
    let t = TempStore::new("private");
    let op = handle(&median::windowed_median::DECL).op();
    let e = t.store.publish(&op, &[]).unwrap_err();
    assert_eq!(e, SharingError::Private { op: "user/example/windowed_median@1".into() });
    assert!(e.to_string().contains("nothing leaves private"), "{e}");
    assert!(!t.dir.join("cards").exists(), "nothing was written for a private op");
}

#[test]
fn unlicensed_and_undescribed_ops_are_refused() {
    let t = TempStore::new("metadata");
    // The macro refuses both at compile time; the store re-checks what it is handed.
    let mut op = RegisteredOp::load(&double_a::DECL).unwrap();
    op.contract.license = None;
    assert_eq!(t.store.publish(&op, &[]).unwrap_err(), SharingError::NoLicense { op: "test/sharing/double@1".into() });
    op.contract.license = Some("MIT AND Nonsense-9".into());
    let e = t.store.publish(&op, &[]).unwrap_err();
    assert!(matches!(&e, SharingError::BadLicense { op, .. } if op == "test/sharing/double@1"), "{e}");
    assert!(e.to_string().contains("not a valid SPDX expression"), "{e}");
    // A public op without a doc comment: the macro refuses it, so make the workspace one public.
    let mut op = RegisteredOp::load(&undocumented::DECL).unwrap();
    op.contract.visibility = serde_json::from_str("\"public\"").unwrap();
    let e = t.store.publish(&op, &[]).unwrap_err();
    assert_eq!(e, SharingError::NoDescription { op: "test/sharing/undocumented@1".into() });
    assert!(e.to_string().contains("doc comment"), "{e}");
}

#[test]
fn a_card_is_unverified_without_a_receipt_and_verified_with_one_for_this_device() {
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let card = OpCard::of(&op, &[], &host());
    assert!(matches!(&card.trust, Trust::Unverified { reason } if reason.contains("no receipt")), "{:?}", card.trust);
    assert_eq!(card.source, OpSource::User);
    assert_eq!(card.tolerance.to_string(), "exact");
    assert_eq!(card.license.as_deref(), Some("MIT"));
    assert_eq!(card.kernels.len(), 2);
    assert_eq!(card.kernels[1].headers.len(), 1, "the CUDA kernel's header is on the card");
    assert_eq!(card.kernels[0].blake3, blob_hash(op.decl.kernels[0].source));

    let receipt = reference_receipt(&h);
    let card = OpCard::of(&op, std::slice::from_ref(&receipt), &host());
    assert_eq!(card.trust, Trust::Verified { device: host() });
    assert_eq!(card.receipts, vec![receipt.clone()]);
    let text = card.to_string();
    for want in [
        "test/sharing/median@1",
        "user",
        "workspace",
        "MIT",
        "selection",
        "exact",
        "windowed_median.wgsl",
        "total_order.cuh",
        "verified on reference",
    ] {
        assert!(text.contains(want), "card lacks `{want}`:\n{text}");
    }
    assert_eq!(OpCard::from_json(&card.to_json()).unwrap(), card);
}

#[test]
fn a_receipt_for_another_device_does_not_verify() {
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let receipt = reference_receipt(&h);
    // The host receipt, seen from another device.
    let gpu =
        DeviceProfile { backend: "wgpu".into(), adapter: "Some GPU".into(), driver: "1.0".into(), vendor_id: 0x10de, device_id: 0x2335 };
    let card = OpCard::of(&op, std::slice::from_ref(&receipt), &gpu);
    assert!(matches!(&card.trust, Trust::Unverified { reason } if reason.contains("not on this device")), "{:?}", card.trust);
    assert_eq!(card.receipts.len(), 1, "an intact receipt for another device stays on the card");
    // A well-formed receipt minted for that other device does not verify on the host.
    let mut other = receipt.clone();
    other.device = gpu.clone();
    other.digest = other.compute_digest();
    let card = OpCard::of(&op, &[other.clone()], &host());
    assert!(!card.trust.is_verified(), "{card}");
    assert!(OpCard::of(&op, &[other], &gpu).trust.is_verified());
    // An altered receipt verifies nowhere and is left off the card.
    let mut forged = receipt;
    forged.cases += 1;
    let card = OpCard::of(&op, &[forged], &host());
    assert!(matches!(&card.trust, Trust::Unverified { reason } if reason.contains("altered")), "{:?}", card.trust);
    assert!(card.receipts.is_empty());
}

#[test]
fn publish_then_load_round_trips_and_republishing_is_idempotent() {
    let t = TempStore::new("roundtrip");
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let first = t.store.publish(&op, &[]).unwrap();
    let again = t.store.publish(&op, &[]).unwrap();
    assert_eq!(first, again);
    assert_eq!(first.content_hash, op.hash_hex());
    let index = t.store.index_path("test/sharing/median@1").unwrap();
    assert!(index.ends_with("cards/test~sharing~median@1.json"), "{}", index.display());

    let loaded = t.store.load("test/sharing/median@1").unwrap();
    assert_eq!(loaded.contract, op.contract);
    assert_eq!(loaded.contract_json, op.decl.contract_json);
    assert_eq!(loaded.body_tokens, op.decl.body_tokens);
    assert_eq!(loaded.kernels[0].source, op.decl.kernels[0].source);
    assert_eq!(loaded.kernels[1].headers.len(), 1);
    assert!(!loaded.trust(&host()).is_verified(), "published without a receipt");

    // Adding a receipt keeps the content and adds the receipt; the loaded card is then the
    // card of the live op with that receipt.
    let receipt = reference_receipt(&h);
    let with = t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
    assert_eq!(with.content_hash, first.content_hash);
    let loaded = t.store.load("test/sharing/median@1").unwrap();
    assert_eq!(loaded.receipts, vec![receipt.clone()]);
    assert_eq!(loaded.card_for(&host()), OpCard::of(&op, &[receipt], &host()));
    assert_eq!(loaded.trust(&host()), Trust::Verified { device: host() });
    assert!(!loaded.trust(&DeviceProfile::host("cpu")).is_verified());
    assert_eq!(t.store.publish(&op, &[]).unwrap(), with, "known receipts are kept");
}

#[test]
fn tampering_with_any_blob_is_refused_naming_the_op_and_file() {
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let receipt = reference_receipt(&h);
    type Pick = fn(&op_runtime::verify::sharing::IndexEntry) -> String;
    let cases: [(&str, Pick); 6] = [
        ("kernel `kernels/windowed_median.wgsl`", |i| i.kernels[0].source.clone()),
        ("header `", |i| i.kernels[1].headers[0].blob.clone()),
        ("card", |i| i.card.clone()),
        ("contract", |i| i.contract.clone()),
        ("body tokens", |i| i.body.clone()),
        ("receipt 0", |i| i.receipts[0].clone()),
    ];
    for (role, pick) in cases {
        let t = TempStore::new("tamper");
        t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
        let blob = t.store.blob_path(&pick(&t.store.load("test/sharing/median@1").unwrap().index));
        tamper(&blob);
        let e = t.store.load("test/sharing/median@1").unwrap_err();
        assert!(matches!(&e, SharingError::Tampered { role: r, .. } if r.starts_with(role)), "{role}: {e:?}");
        assert_eq!(e.op(), "test/sharing/median@1");
        assert_eq!(e.file(), Some(blob.as_path()));
        assert!(e.to_string().contains(&blob.display().to_string()), "{e}");
        // Republishing repairs the blob.
        t.store.publish(&op, &[]).unwrap();
        t.store.load("test/sharing/median@1").unwrap();
    }
}

#[test]
fn a_consistent_index_over_other_content_fails_the_identity_check() {
    let t = TempStore::new("identity");
    let op = RegisteredOp::load(&double_a::DECL).unwrap();
    t.store.publish(&op, &[]).unwrap();
    let other = RegisteredOp::load(&double_b::DECL).unwrap();
    // Swap in the other body through a well-formed blob: every blob matches its name.
    let path = t.store.index_path("test/sharing/double@1").unwrap();
    let mut index = t.store.load("test/sharing/double@1").unwrap().index;
    let body = blob_hash(other.decl.body_tokens.as_bytes());
    std::fs::write(t.store.blob_path(&body), other.decl.body_tokens).unwrap();
    index.body = body;
    std::fs::write(&path, serde_json::to_string(&index).unwrap()).unwrap();
    let e = t.store.load("test/sharing/double@1").unwrap_err();
    assert!(
        matches!(&e, SharingError::IdentityMismatch { card, recomputed, .. } if *card == op.hash_hex() && *recomputed == other.hash_hex()),
        "{e:?}"
    );
}

#[test]
fn changed_content_under_a_published_name_and_version_is_refused() {
    let t = TempStore::new("changed");
    let a = RegisteredOp::load(&double_a::DECL).unwrap();
    let b = RegisteredOp::load(&double_b::DECL).unwrap();
    t.store.publish(&a, &[]).unwrap();
    let e = t.store.publish(&b, &[]).unwrap_err();
    assert_eq!(e, SharingError::ContentChanged { op: "test/sharing/double@1".into(), published: a.hash_hex(), new: b.hash_hex() });
    let msg = e.to_string();
    assert!(msg.contains("bump the version") && msg.contains("new name"), "{msg}");
    assert_eq!(t.store.load("test/sharing/double@1").unwrap().card.content_hash, a.hash_hex(), "the published content is untouched");
}

#[test]
fn a_builtin_publishes_and_loads_with_source_builtin() {
    let t = TempStore::new("builtin");
    let add = builtin_add();
    t.store.publish(&add, &[]).unwrap();
    let loaded = t.store.load("builtin/add@1").unwrap();
    assert_eq!(loaded.source(), OpSource::Builtin);
    assert_eq!(loaded.card.description, add.decl.description);
    assert_eq!(loaded.card.kernels[0].path, "kernels/add.wgsl");
    assert!(loaded.card.to_string().contains("[builtin, public, licence MIT OR Apache-2.0]"), "{}", loaded.card);
}

#[test]
fn bad_input_is_a_typed_error_never_a_panic() {
    let t = TempStore::new("bad");
    let id = "test/sharing/double@1";
    assert!(matches!(t.store.load(id), Err(SharingError::NotPublished { .. })));
    for bad in ["no-version", "x@y", "../../etc@1", "a\\b@1", "@1", ""] {
        assert!(matches!(t.store.load(bad), Err(SharingError::BadId { .. })), "{bad}");
    }
    let op = RegisteredOp::load(&double_a::DECL).unwrap();
    t.store.publish(&op, &[]).unwrap();
    let index_path = t.store.index_path(id).unwrap();
    let index = t.store.load(id).unwrap().index;
    // A missing blob.
    std::fs::remove_file(t.store.blob_path(&index.contract)).unwrap();
    let e = t.store.load(id).unwrap_err();
    assert!(matches!(&e, SharingError::MissingBlob { role, .. } if role == "contract"), "{e:?}");
    t.store.publish(&op, &[]).unwrap();
    // An index naming a path instead of a blob hash.
    let mut evil = index.clone();
    evil.card = "../cards/x".into();
    std::fs::write(&index_path, serde_json::to_string(&evil).unwrap()).unwrap();
    assert!(matches!(t.store.load(id), Err(SharingError::Corrupt { .. })));
    // Corrupt index JSON: load and publish both refuse, naming the file.
    std::fs::write(&index_path, b"{ not json").unwrap();
    let e = t.store.load(id).unwrap_err();
    assert!(matches!(&e, SharingError::Corrupt { file, .. } if *file == index_path), "{e:?}");
    assert!(matches!(t.store.publish(&op, &[]), Err(SharingError::Corrupt { .. })));
    // A store path that is a file: an I/O error naming the op.
    let file = t.dir.join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let e = Store::open(&file).publish(&op, &[]).unwrap_err();
    assert!(matches!(&e, SharingError::Io { op, .. } if op == id), "{e:?}");
}
