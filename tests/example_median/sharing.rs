//! Sharing: the store refuses private and unlicensed ops and public ops below the built-ins'
//! bar (listing what is missing), round-trips published ones, refuses tampered files naming the
//! op and the file, refuses a card edited in any field the identity covers (the description is
//! shown as unverified text), loses no receipt and no card to concurrent publishers (threads
//! and processes), never follows a planted symlink (a file's or any store directory's), never
//! panics on a damaged file, and `repair` rebuilds index entries from the blobs. (Cards and
//! trust: `tests/example_median/trust.rs`.)

use crate::median;

use op_runtime::conformance::conform;
use op_runtime::receipt::Receipt;
use op_runtime::sharing::{blob_hash, IndexEntry, LocalDevices, Missing, OpCard, SharingError, Store};
use op_runtime::testing::with_edited_contract;
use op_runtime::trust::TrustList;
use op_runtime::OpDecl;
use op_runtime::OpSource;
use op_runtime::RegisteredOp;
use op_runtime::{op, BackendKind, DType, OpHandle, Real, Registry};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Windowed median shared with the workspace: the example's reference and kernels (the CUDA one
/// `#include`s a header), licensed so it may leave private.
#[op(
    name = "test/sharing/median", version = 1,
    signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
    category = selection, tolerance = exact, backward = none,
    kernel(wgsl = "examples/windowed_median/kernels/windowed_median.wgsl",
           bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1),
    kernel(cuda = "examples/windowed_median/kernels/windowed_median.cu",
           bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1, block = 128),
    license = "MIT", visibility = workspace,
)]
pub fn shared_median<T: Real>(x: &[T], w: u32) -> Vec<T> {
    median::windowed_median(x, w)
}

/// Doubles every element.
#[op(name = "test/sharing/double", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none, license = "Apache-2.0", visibility = workspace)]
pub fn double_a<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * T::from_f64(2.0)).collect()
}

/// Same name and version as `double_a`, different body: changed content.
#[op(name = "test/sharing/double", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none, license = "Apache-2.0", visibility = workspace)]
pub fn double_b<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

#[op(name = "test/sharing/undocumented", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none, license = "MIT", visibility = workspace)]
pub fn undocumented<T: Real>(x: &[T]) -> Vec<T> {
    x.to_vec()
}

/// Scales `x` by `s` (`s * x`), with a `cpu` kernel: everything the public bar asks for.
#[op(name = "test/sharing/scale", version = 1, signature(x: f32[n], s: f32) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none, cpu = scale_cpu, license = "MIT", visibility = public)]
pub fn scale<T: Real>(x: &[T], s: T) -> Vec<T> {
    x.iter().map(|v| *v * s).collect()
}

/// The `cpu` kernel of `scale`.
pub fn scale_cpu(x: &[f32], s: f32) -> Vec<f32> {
    x.iter().map(|v| v * s).collect()
}

/// Scales every element (the parameter is named nowhere in a code span).
#[op(name = "test/sharing/scale_undocumented", version = 1, signature(x: f32[n], factor: f32) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none, cpu = scale_cpu, license = "MIT", visibility = public)]
pub fn scale_undocumented<T: Real>(x: &[T], factor: T) -> Vec<T> {
    x.iter().map(|v| *v * factor).collect()
}

#[op(name = "test/sharing/bare", version = 1, signature(x: f32[n], factor: f32) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none, cpu = scale_cpu, license = "MIT", visibility = workspace)]
pub fn bare<T: Real>(x: &[T], factor: T) -> Vec<T> {
    x.iter().map(|v| *v * factor).collect()
}

/// A store at `<scratch>/store` (not yet created), with room beside it for a test's other files
/// (`dir.with_extension(..)`); the scratch directory is removed on drop, also when a test panics.
struct TempStore {
    dir: PathBuf,
    store: Store,
    _scratch: tempfile::TempDir,
}

impl TempStore {
    fn new(tag: &str) -> TempStore {
        let scratch = tempfile::Builder::new().prefix(&format!("op-sharing-{tag}-")).tempdir().expect("a scratch directory");
        let dir = scratch.path().join("store");
        TempStore { store: Store::open(&dir), dir, _scratch: scratch }
    }
}

fn handle(decl: &'static OpDecl) -> OpHandle {
    Registry::new().register(decl).expect("registers")
}

fn verified_here(loaded: &op_runtime::sharing::LoadedCard) -> bool {
    loaded.verified(BackendKind::Reference, &LocalDevices::host(), &TrustList::new())
}

/// A distinct intact receipt per `tag`: `base` as if minted on a device named by `tag`.
fn variant(base: &Receipt, tag: &str) -> Receipt {
    let mut r = base.clone();
    r.device.details.insert("test.publisher".into(), tag.to_string());
    r.digest = r.compute_digest();
    r
}

/// Every file of the store (not lock files), sorted.
fn store_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_none_or(|x| x != "lock") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

fn reference_receipt(h: &OpHandle) -> Receipt {
    conform(h, BackendKind::Reference).expect("the reference conforms to itself")
}

/// The built-in `add` as the built-in registration path loads it (source: builtin).
fn builtin_add() -> std::sync::Arc<RegisteredOp> {
    op_runtime::registry().lookup("builtin/add").expect("builtin/add exists").op()
}

/// A receipt for the `cpu` kernel of the built-in `id` at `T = f32` (conformed here, once per
/// process): what publishing a public op asks for besides the reference.
fn cpu_receipt(id: &str) -> Receipt {
    static CONFORMED: std::sync::Mutex<BTreeMap<String, Receipt>> = std::sync::Mutex::new(BTreeMap::new());
    if let Some(r) = CONFORMED.lock().unwrap().get(id) {
        return r.clone();
    }
    let h = op_runtime::registry().lookup(id).expect("a built-in").at(&[DType::f32]).expect("an f32 instance");
    let r = conform(&h, BackendKind::Cpu).unwrap_or_else(|e| panic!("{id}: the cpu kernel conforms: {e}"));
    CONFORMED.lock().unwrap().insert(id.to_string(), r.clone());
    r
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
    let op = with_edited_contract(&double_a::DECL, |c| c.license = None).unwrap();
    assert_eq!(t.store.publish(&op, &[]).unwrap_err(), SharingError::NoLicense { op: "test/sharing/double@1".into() });
    let op = with_edited_contract(&double_a::DECL, |c| c.license = Some("MIT AND Nonsense-9".into())).unwrap();
    let e = t.store.publish(&op, &[]).unwrap_err();
    assert!(matches!(&e, SharingError::BadLicense { op, .. } if op == "test/sharing/double@1"), "{e}");
    assert!(e.to_string().contains("not a valid SPDX expression"), "{e}");
    // A public op without a doc comment: the macro refuses it, so make the workspace one public.
    let op = with_edited_contract(&undocumented::DECL, |c| c.visibility = serde_json::from_str("\"public\"").unwrap()).unwrap();
    let e = t.store.publish(&op, &[]).unwrap_err();
    assert_eq!(
        e,
        SharingError::BelowPublicBar {
            op: "test/sharing/undocumented@1".into(),
            missing: vec![Missing::Description, Missing::KernelReceipt]
        }
    );
    assert!(e.to_string().contains("doc comment"), "{e}");
}

/// `public` is the bar every built-in meets: a licence, a description, each scalar parameter
/// named in it, and a receipt for a kernel besides the reference. A public op below it is
/// refused at publish with everything it lacks, in one error; a complete one publishes.
#[test]
fn a_public_op_is_refused_with_the_list_of_what_it_lacks_and_a_complete_one_publishes() {
    let t = TempStore::new("public");
    // Everything missing at once: no licence, no description (the macro refuses both for a
    // public op, so a workspace op is made public here), `factor` undocumented, only a
    // reference receipt.
    let h = handle(&bare::DECL);
    let reference = reference_receipt(&h);
    let op = with_edited_contract(&bare::DECL, |c| {
        c.visibility = serde_json::from_str("\"public\"").unwrap();
        c.license = None;
    })
    .unwrap();
    let e = t.store.publish(&op, std::slice::from_ref(&reference)).unwrap_err();
    let all = vec![Missing::License, Missing::Description, Missing::ParameterDocs(vec!["factor".into()]), Missing::KernelReceipt];
    assert_eq!(e, SharingError::BelowPublicBar { op: "test/sharing/bare@1".into(), missing: all });
    let msg = e.to_string();
    for says in ["licence", "doc comment", "`factor`", "a receipt for a kernel besides the reference", "visibility = workspace"] {
        assert!(msg.contains(says), "{says}: {msg}");
    }
    // A cpu receipt for this content removes one item.
    let cpu = conform(&h, BackendKind::Cpu).expect("the cpu kernel conforms");
    let e = t.store.publish(&op, &[reference, cpu]).unwrap_err();
    assert!(
        matches!(&e, SharingError::BelowPublicBar { missing, .. } if missing.len() == 3 && !missing.contains(&Missing::KernelReceipt)),
        "{e}"
    );
    // Documented, but the parameter is named in no code span: only that is missing.
    let h = handle(&scale_undocumented::DECL);
    let cpu = conform(&h, BackendKind::Cpu).expect("the cpu kernel conforms");
    let e = t.store.publish(&h.op(), &[reference_receipt(&h), cpu.clone()]).unwrap_err();
    let id = "test/sharing/scale_undocumented@1".to_string();
    assert_eq!(e, SharingError::BelowPublicBar { op: id, missing: vec![Missing::ParameterDocs(vec!["factor".into()])] });
    // A receipt that is not intact, or is for other content, does not count.
    let mut forged = cpu.clone();
    forged.cases += 1;
    let complete = handle(&scale::DECL);
    let e = t.store.publish(&complete.op(), &[reference_receipt(&complete), forged]).unwrap_err();
    assert!(matches!(&e, SharingError::BelowPublicBar { missing, .. } if *missing == vec![Missing::KernelReceipt]), "{e}");
    assert!(!t.dir.join("cards").exists(), "nothing was written for a refused op");

    // The complete op publishes, and so does a built-in with its cpu receipt.
    let cpu = conform(&complete, BackendKind::Cpu).expect("the cpu kernel conforms");
    t.store.publish(&complete.op(), &[reference_receipt(&complete), cpu]).expect("meets the bar");
    assert!(t.store.load("test/sharing/scale@1").unwrap().card.to_string().contains("[user, public, licence MIT]"));
    let e = t.store.publish(&builtin_add(), &[]).unwrap_err();
    assert!(matches!(&e, SharingError::BelowPublicBar { missing, .. } if *missing == vec![Missing::KernelReceipt]), "{e}");
    t.store.publish(&builtin_add(), &[cpu_receipt("builtin/add")]).expect("a built-in meets the bar");
    // Every built-in meets the rest of the bar (licence, description, parameters documented):
    // without receipts, the kernel receipt is all it lacks.
    for b in op_runtime::registry().ops().iter().filter(|o| o.id().starts_with("builtin/") && !o.is_vjp_op()) {
        assert_eq!(op_runtime::sharing::public_bar(b, &[]), vec![Missing::KernelReceipt], "{}", b.id());
    }
}

#[test]
fn publish_then_load_round_trips_and_republishing_is_idempotent() {
    let t = TempStore::new("roundtrip");
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let first = t.store.publish(&op, &[]).unwrap();
    let again = t.store.publish(&op, &[]).unwrap();
    assert_eq!(first, again);
    assert_eq!((first.content_hash.as_str(), first.receipts), (op.hash_hex().as_str(), 0));
    let index = t.store.index_path("test/sharing/median@1").unwrap();
    assert!(index.ends_with("cards/test~sharing~median@1.json"), "{}", index.display());

    let loaded = t.store.load("test/sharing/median@1").unwrap();
    assert_eq!(&loaded.contract, op.contract());
    assert_eq!(loaded.contract_json, op.decl().contract_json);
    assert_eq!(loaded.body_tokens, op.decl().body_tokens);
    assert_eq!(loaded.kernels[0].source, op.decl().kernels[0].source);
    assert_eq!(loaded.kernels[1].headers.len(), 1);
    assert!(!verified_here(&loaded), "published without a receipt");

    // Adding a receipt keeps the content and adds the receipt; the loaded card is then the
    // card of the live op with that receipt.
    let receipt = reference_receipt(&h);
    let with = t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
    assert_eq!((with.content_hash.as_str(), with.card.as_str(), with.receipts), (first.content_hash.as_str(), first.card.as_str(), 1));
    let loaded = t.store.load("test/sharing/median@1").unwrap();
    assert_eq!(loaded.receipts, vec![receipt.clone()]);
    let devices = LocalDevices::host();
    assert_eq!(loaded.card_for(&devices, &TrustList::new()), OpCard::of(&op, &[receipt], &devices, &TrustList::new()));
    assert!(verified_here(&loaded));
    assert!(!loaded.verified(BackendKind::Reference, &LocalDevices::new(), &TrustList::new()), "no device, no trust");
    assert_eq!(t.store.publish(&op, &[]).unwrap(), with, "known receipts are kept");
}

#[test]
fn tampering_with_any_stored_file_is_refused_naming_the_op_and_file() {
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let receipt = reference_receipt(&h);
    type Pick = fn(&Store, &IndexEntry) -> PathBuf;
    let cases: [(&str, Pick); 6] = [
        ("kernel `examples/windowed_median/kernels/windowed_median.wgsl`", |s, i| s.blob_path(&i.kernels[0].source)),
        ("header `", |s, i| s.blob_path(&i.kernels[1].headers[0].blob)),
        ("card", |s, i| s.blob_path(&i.card)),
        ("contract", |s, i| s.blob_path(&i.contract)),
        ("body tokens", |s, i| s.blob_path(&i.body)),
        ("receipt", |s, i| {
            let dir = s.receipts_dir(&i.op, &i.content_hash).unwrap();
            std::fs::read_dir(dir).unwrap().next().unwrap().unwrap().path()
        }),
    ];
    for (role, pick) in cases {
        let t = TempStore::new("tamper");
        t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
        let file = pick(&t.store, &t.store.load("test/sharing/median@1").unwrap().index);
        tamper(&file);
        let e = t.store.load("test/sharing/median@1").unwrap_err();
        assert!(matches!(&e, SharingError::Tampered { role: r, .. } if r.starts_with(role)), "{role}: {e:?}");
        assert_eq!(e.op(), "test/sharing/median@1");
        assert_eq!(e.file(), Some(file.as_path()));
        assert!(e.to_string().contains(&file.display().to_string()), "{e}");
        // Republishing repairs it.
        t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
        assert_eq!(t.store.load("test/sharing/median@1").unwrap().receipts, vec![receipt.clone()]);
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
    let body = blob_hash(other.decl().body_tokens.as_bytes());
    std::fs::write(t.store.blob_path(&body), other.decl().body_tokens).unwrap();
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

/// A VJP op is derived from its op at registration: it is not published on its own (its op's
/// card lists the VJP kernels, and loading the op derives it again).
#[test]
fn a_vjp_op_is_published_with_its_op_not_alone() {
    let t = TempStore::new("vjp");
    let vjp = op_runtime::registry().lookup("builtin/add").unwrap().vjp_op().expect("add declares VJP kernels").op();
    match t.store.publish(&vjp, &[]) {
        Err(SharingError::DerivedOp { op, of }) => assert_eq!((op.as_str(), of.as_str()), ("builtin/add/vjp@1", "builtin/add@1")),
        other => panic!("expected DerivedOp, got {other:?}"),
    }
    t.store.publish(&builtin_add(), &[cpu_receipt("builtin/add")]).unwrap();
    let loaded = t.store.load("builtin/add@1").unwrap();
    let card = loaded.card;
    let vjp_kernel = card.kernels.iter().find(|k| k.path == "kernels/binary_vjp.wgsl");
    assert!(vjp_kernel.is_some_and(|k| k.backward), "the card lists the VJP kernels, marked: {:?}", card.kernels);
    // A well-formed card that does not mark them (an older format, or an edit) is refused: its
    // VJP kernels would get trust lines judged by the op's own receipts.
    let mut unmarked = card.clone();
    unmarked.kernels.iter_mut().for_each(|k| k.backward = false);
    let text = unmarked.to_json();
    let blob = blob_hash(text.as_bytes());
    std::fs::write(t.store.blob_path(&blob), &text).unwrap();
    let mut index = loaded.index;
    index.card = blob;
    std::fs::write(t.store.index_path("builtin/add@1").unwrap(), serde_json::to_string(&index).unwrap()).unwrap();
    let e = t.store.load("builtin/add@1").unwrap_err();
    assert!(e.to_string().contains(".backward` disagrees"), "{e}");
}

#[test]
fn a_builtin_publishes_and_loads_with_source_builtin() {
    let t = TempStore::new("builtin");
    let add = builtin_add();
    t.store.publish(&add, &[cpu_receipt("builtin/add")]).unwrap();
    let loaded = t.store.load("builtin/add@1").unwrap();
    assert_eq!(loaded.source(), OpSource::Builtin);
    assert_eq!(loaded.card.description, add.decl().description);
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
    // Corrupt index JSON: load refuses naming the file; publishing is not blocked and replaces it.
    std::fs::write(&index_path, b"{ not json").unwrap();
    let e = t.store.load(id).unwrap_err();
    assert!(matches!(&e, SharingError::Corrupt { file, .. } if *file == index_path), "{e:?}");
    t.store.publish(&op, &[]).expect("a corrupt index never blocks publishing");
    t.store.load(id).expect("the republished entry loads");
    // A store path that is a file: an I/O error naming the op.
    let file = t.dir.join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let e = Store::open(&file).publish(&op, &[]).unwrap_err();
    assert!(matches!(&e, SharingError::Io { op, .. } if op == id), "{e:?}");
}

#[test]
fn eight_threads_by_thirty_rounds_lose_no_receipt_and_no_card() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 30;
    let t = TempStore::new("threads");
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let base = reference_receipt(&h);
    // Each thread also publishes a built-in's card every round (with its cpu receipt: they are
    // public), so cards race too.
    let builtins: Vec<(Arc<RegisteredOp>, Receipt)> = ["add", "sub", "mul", "div", "neg", "scale", "exp", "relu"]
        .into_iter()
        .map(|n| {
            let id = format!("builtin/{n}");
            (op_runtime::registry().lookup(&id).unwrap().op(), cpu_receipt(&id))
        })
        .collect();
    assert_eq!(builtins.len(), THREADS);
    std::thread::scope(|s| {
        for (th, (builtin, receipt)) in builtins.iter().enumerate() {
            let (store, op, base) = (&t.store, &op, &base);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    let r = variant(base, &format!("thread {th} round {round}"));
                    store.publish(op, &[r]).unwrap_or_else(|e| panic!("thread {th} round {round}: {e}"));
                    let receipts = std::slice::from_ref(receipt);
                    store.publish(builtin, receipts).unwrap_or_else(|e| panic!("thread {th} round {round}: {}: {e}", builtin.id()));
                }
            });
        }
    });
    let loaded = t.store.load("test/sharing/median@1").unwrap();
    let tags: BTreeSet<String> = loaded.receipts.iter().map(|r| r.device.details["test.publisher"].clone()).collect();
    let want: BTreeSet<String> = (0..THREADS).flat_map(|th| (0..ROUNDS).map(move |r| format!("thread {th} round {r}"))).collect();
    assert_eq!(tags.len(), THREADS * ROUNDS, "missing: {:?}", want.difference(&tags).take(5).collect::<Vec<_>>());
    assert_eq!(tags, want);
    for (b, _) in &builtins {
        t.store.load(b.id()).unwrap_or_else(|e| panic!("{}: {e}", b.id()));
    }
    let stray: Vec<PathBuf> = store_files(&t.dir).into_iter().filter(|p| p.to_string_lossy().contains(".tmp-")).collect();
    assert!(stray.is_empty(), "temporary files left behind: {stray:?}");
}

/// Set in a child process: `<store dir>|<child index>|<rounds>|<go file>|<base receipt file>`.
/// Read only by the tests in this file.
const CHILD_ENV: &str = "OP_SHARING_TEST_CHILD";

/// The child role of `four_processes_publishing_concurrently_lose_no_receipt`: does nothing
/// unless its parent set [`CHILD_ENV`].
#[test]
fn child_publisher_role() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let parts: Vec<&str> = spec.split('|').collect();
    let [dir, child, rounds, go, base] = parts[..] else { panic!("bad {CHILD_ENV}: {spec}") };
    let rounds: usize = rounds.parse().unwrap();
    let store = Store::open(dir);
    let h = handle(&shared_median::DECL);
    let base = Receipt::from_json(&std::fs::read_to_string(base).unwrap()).unwrap();
    let start = std::time::Instant::now();
    while !Path::new(go).exists() {
        assert!(start.elapsed().as_secs() < 60, "the parent never said go");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    for round in 0..rounds {
        let r = variant(&base, &format!("process {child} round {round}"));
        store.publish(&h.op(), &[r]).unwrap_or_else(|e| panic!("process {child} round {round}: {e}"));
    }
}

#[test]
fn four_processes_publishing_concurrently_lose_no_receipt() {
    const PROCESSES: usize = 4;
    const ROUNDS: usize = 25;
    let t = TempStore::new("processes");
    let go = t.dir.with_extension("go");
    let _ = std::fs::remove_file(&go);
    let base = t.dir.with_extension("base.json");
    std::fs::write(&base, reference_receipt(&handle(&shared_median::DECL)).to_json()).unwrap();
    let exe = std::env::current_exe().unwrap();
    // The child's test by its full name in this binary (`sharing::child_publisher_role`).
    let child_test = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::child_publisher_role"),
        None => "child_publisher_role".to_string(),
    };
    let children: Vec<_> = (0..PROCESSES)
        .map(|k| {
            std::process::Command::new(&exe)
                .args(["--exact", child_test.as_str(), "--test-threads=1", "--nocapture"])
                .env(CHILD_ENV, format!("{}|{k}|{ROUNDS}|{}|{}", t.dir.display(), go.display(), base.display()))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("re-executes the test binary")
        })
        .collect();
    std::fs::write(&go, b"go").unwrap();
    for (k, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "child {k} failed: {}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_file(&go);
    let _ = std::fs::remove_file(&base);
    let loaded = t.store.load("test/sharing/median@1").unwrap();
    let tags: BTreeSet<String> = loaded.receipts.iter().map(|r| r.device.details["test.publisher"].clone()).collect();
    let want: BTreeSet<String> = (0..PROCESSES).flat_map(|k| (0..ROUNDS).map(move |r| format!("process {k} round {r}"))).collect();
    assert_eq!(tags, want, "every receipt of every process is present");
}

#[test]
fn racing_publishers_of_different_content_under_one_name_never_both_succeed() {
    let a = RegisteredOp::load(&double_a::DECL).unwrap();
    let b = RegisteredOp::load(&double_b::DECL).unwrap();
    for trial in 0..10 {
        let t = TempStore::new("race");
        let results: Vec<(String, Result<_, SharingError>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..6)
                .map(|i| {
                    let (store, op) = (&t.store, if i % 2 == 0 { &a } else { &b });
                    s.spawn(move || (op.hash_hex(), store.publish(op, &[])))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let published = t.store.load("test/sharing/double@1").unwrap().card.content_hash;
        for (hash, r) in results {
            match r {
                Ok(id) => assert_eq!(id.content_hash, published, "trial {trial}: a publisher was told Ok but its content is not published"),
                Err(SharingError::ContentChanged { published: p, new, .. }) => assert_eq!((p, new), (published.clone(), hash)),
                Err(e) => panic!("trial {trial}: {e}"),
            }
        }
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_planted_at_any_path_the_store_writes_is_never_followed() {
    use std::os::unix::fs::symlink;
    let t = TempStore::new("symlink");
    let outside = t.dir.with_extension("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let receipt = reference_receipt(&h);
    // Where the files will go: publish once into a scratch store to learn every path.
    let scratch = TempStore::new("symlink-scratch");
    scratch.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
    let mut targets: Vec<PathBuf> = store_files(&scratch.dir).iter().map(|p| t.dir.join(p.strip_prefix(&scratch.dir).unwrap())).collect();
    targets.push(t.store.index_path("test/sharing/median@1").unwrap().with_extension("lock"));
    // And the predictable temporary names older versions used, in every directory.
    let dirs: BTreeSet<PathBuf> = targets.iter().filter_map(|p| p.parent().map(Path::to_path_buf)).collect();
    for d in &dirs {
        for seq in 0..32 {
            targets.push(d.join(format!(".tmp-{}-{seq}", std::process::id())));
        }
    }
    for (i, p) in targets.iter().enumerate() {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        // Half point at the victim, half dangle into a directory outside the store.
        if i % 2 == 0 {
            symlink(&victim, p).unwrap();
        } else {
            symlink(outside.join(format!("created-{i}")), p).unwrap();
        }
    }
    t.store.publish(&op, std::slice::from_ref(&receipt)).expect("publishes around the planted links");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "a symlink's target was written");
    let created: Vec<String> =
        std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(created, vec!["victim".to_string()], "a dangling symlink was followed");
    let loaded = t.store.load("test/sharing/median@1").unwrap();
    assert_eq!(loaded.receipts, vec![receipt]);
    // A symlinked store subdirectory is refused, not written through.
    let t2 = TempStore::new("symlink-dir");
    std::fs::create_dir_all(&t2.dir).unwrap();
    symlink(&outside, t2.dir.join("blobs")).unwrap();
    let e = t2.store.publish(&op, &[]).unwrap_err();
    assert!(matches!(e, SharingError::Io { .. }), "{e:?}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "nothing was written through the symlinked directory");
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn fuzzed_and_bit_flipped_store_files_give_typed_errors_and_never_block_publishing() {
    let t = TempStore::new("fuzz");
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let receipt = reference_receipt(&h);
    t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
    let files = store_files(&t.dir);
    assert!(files.len() >= 8, "{files:?}");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut outcomes = [0usize; 2];
    for round in 0..250 {
        let file = &files[(next() % files.len() as u64) as usize];
        let original = std::fs::read(file).unwrap();
        let mut bytes = original.clone();
        let at = (next() % bytes.len().max(1) as u64) as usize;
        match next() % 5 {
            0 if !bytes.is_empty() => bytes[at] ^= 1 << (next() % 8),
            1 => bytes.truncate(at),
            2 => bytes.splice(at..at, [0xc3, 0x28, 0xff, b'"', b'}']).for_each(drop),
            3 => bytes = Vec::new(),
            _ => bytes.splice(at..at, "é\u{0}😀".bytes()).for_each(drop),
        }
        std::fs::write(file, &bytes).unwrap();
        let loaded = catch_unwind(AssertUnwindSafe(|| t.store.load("test/sharing/median@1")))
            .unwrap_or_else(|_| panic!("round {round}: load panicked on {} mutated", file.display()));
        outcomes[loaded.is_ok() as usize] += 1;
        if let Err(e) = &loaded {
            assert_eq!(e.op(), "test/sharing/median@1", "{e}");
        }
        let repaired = catch_unwind(AssertUnwindSafe(|| t.store.publish(&op, std::slice::from_ref(&receipt))))
            .unwrap_or_else(|_| panic!("round {round}: publish panicked on {} mutated", file.display()));
        repaired.unwrap_or_else(|e| panic!("round {round}: a damaged {} blocked publishing: {e}", file.display()));
        let back = t.store.load("test/sharing/median@1").unwrap_or_else(|e| panic!("round {round}: not repaired: {e}"));
        assert_eq!(back.receipts, vec![receipt.clone()]);
        if std::fs::read(file).ok().as_deref() != Some(&original[..]) {
            std::fs::write(file, &original).unwrap();
        }
    }
    assert!(outcomes[0] > 150, "most mutations must be refused (refused, accepted) = {outcomes:?}");
}

#[test]
fn repair_rebuilds_lost_and_corrupt_index_entries_from_the_blobs() {
    let t = TempStore::new("repair");
    let h = handle(&shared_median::DECL);
    let median = h.op();
    let receipt = reference_receipt(&h);
    let add = builtin_add();
    let double = RegisteredOp::load(&double_a::DECL).unwrap();
    let add_receipt = cpu_receipt("builtin/add");
    for op in [&median, &add, &double] {
        let receipts = if op.id() == median.id() {
            std::slice::from_ref(&receipt)
        } else if op.id() == add.id() {
            std::slice::from_ref(&add_receipt)
        } else {
            &[]
        };
        t.store.publish(op, receipts).unwrap();
    }
    // Lose one index entry, corrupt another, keep the third.
    std::fs::remove_file(t.store.index_path("test/sharing/median@1").unwrap()).unwrap();
    std::fs::write(t.store.index_path("builtin/add@1").unwrap(), b"\xff not an index").unwrap();
    assert!(t.store.load("test/sharing/median@1").is_err() && t.store.load("builtin/add@1").is_err());
    // Leftovers of a crash: temporary files in every directory.
    for d in ["blobs", "cards"] {
        std::fs::write(t.dir.join(d).join(".tmp-crashed.tmp"), b"half a file").unwrap();
    }
    let report = t.store.repair().unwrap();
    assert_eq!(report.rebuilt, vec!["builtin/add@1".to_string(), "test/sharing/median@1".to_string()], "{report:?}");
    assert_eq!(report.kept, vec!["test/sharing/double@1".to_string()], "{report:?}");
    assert!(report.conflicts.is_empty() && report.unrecoverable.is_empty() && report.damaged_blobs.is_empty(), "{report:?}");
    assert_eq!(t.store.load("test/sharing/median@1").unwrap().receipts, vec![receipt]);
    t.store.load("builtin/add@1").unwrap();
    assert_eq!(t.store.repair().unwrap().rebuilt, Vec::<String>::new(), "repair is idempotent");

    // Two loadable contents for one name and no index to choose: a conflict, nothing written.
    let index = t.store.index_path("test/sharing/double@1").unwrap();
    std::fs::remove_file(&index).unwrap();
    t.store.publish(&RegisteredOp::load(&double_b::DECL).unwrap(), &[]).unwrap();
    std::fs::remove_file(&index).unwrap();
    let report = t.store.repair().unwrap();
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    assert_eq!(report.conflicts[0].0, "test/sharing/double@1");
    assert!(!index.exists());
    // A damaged blob is reported, and an index naming it is unrecoverable.
    let loaded = t.store.load("builtin/add@1").unwrap();
    tamper(&t.store.blob_path(&loaded.index.contract));
    let report = t.store.repair().unwrap();
    assert_eq!(report.damaged_blobs, vec![t.store.blob_path(&loaded.index.contract)], "{report:?}");
    assert!(report.unrecoverable.iter().any(|(f, why)| f.ends_with("builtin~add@1.json") && why.contains("tampered")), "{report:?}");
}

/// An intact store repairs with nothing reported but the ops it kept; a blob that cannot be
/// read (tests run as root, so permissions stop no read: a directory and a dangling symlink
/// named as blobs) is reported by `repair` with its error and counted by `damaged_blobs`, one
/// walk giving both the same blobs.
#[cfg(unix)]
#[test]
fn repair_reports_the_blobs_it_could_not_read_and_nothing_for_an_intact_store() {
    use op_runtime::sharing::{RepairReport, UnreadableBlob};
    let t = TempStore::new("unreadable");
    t.store.publish(&RegisteredOp::load(&double_a::DECL).unwrap(), &[]).unwrap();
    let intact = RepairReport { kept: vec!["test/sharing/double@1".to_string()], ..RepairReport::default() };
    assert_eq!(t.store.repair().unwrap(), intact);
    assert_eq!(t.store.damaged_blobs().unwrap(), Vec::<PathBuf>::new());

    let (dir_blob, link_blob) = (t.store.blob_path(&blob_hash(b"a directory")), t.store.blob_path(&blob_hash(b"a dangling link")));
    std::fs::create_dir(&dir_blob).unwrap();
    std::os::unix::fs::symlink(t.dir.with_extension("nowhere"), &link_blob).unwrap();
    assert!(std::fs::read(&dir_blob).is_err() && std::fs::read(&link_blob).is_err(), "the reads really fail");
    let tampered = t.store.blob_path(&blob_hash(b"these bytes"));
    std::fs::write(&tampered, b"other bytes").unwrap();

    let report = t.store.repair().unwrap();
    let mut unreadable: Vec<PathBuf> = report.unreadable_blobs.iter().map(|u| u.path.clone()).collect();
    unreadable.sort();
    let mut want = vec![dir_blob.clone(), link_blob.clone()];
    want.sort();
    assert_eq!(unreadable, want, "{report:?}");
    for UnreadableBlob { path, error } in &report.unreadable_blobs {
        assert!(matches!(error, SharingError::Corrupt { file, .. } if file == path), "{error:?}");
    }
    assert_eq!(report.damaged_blobs, vec![tampered.clone()], "{report:?}");
    assert_eq!(report.kept, intact.kept, "the op's own blobs are intact: {report:?}");
    let mut counted = t.store.damaged_blobs().unwrap();
    counted.sort();
    let mut all = [want, vec![tampered]].concat();
    all.sort();
    assert_eq!(counted, all, "damaged_blobs counts the damaged and the unreadable blobs repair reports");
}

/// Every directory the store creates or writes into (`blobs`, `receipts`, `receipts/<hash>`,
/// `cards`) is reached from the store's root without following a symlink at any component: a
/// symlink planted at any of them, pointing outside the store, is refused by `publish` with an
/// I/O error naming it, and nothing is created or written outside the store; `load` refuses to
/// read through one too. The root itself is the caller's to name, a link included.
#[cfg(unix)]
#[test]
fn a_symlink_planted_at_each_store_directory_is_refused_with_nothing_written_outside() {
    use std::os::unix::fs::symlink;
    let h = handle(&shared_median::DECL);
    let op = h.op();
    let receipt = reference_receipt(&h);
    let id = "test/sharing/median@1";
    let subdirs = ["blobs".to_string(), "receipts".to_string(), format!("receipts/{}", op.hash_hex()), "cards".to_string()];
    for sub in &subdirs {
        let t = TempStore::new("dir-link");
        let outside = t.dir.with_extension("outside");
        let _ = std::fs::remove_dir_all(&outside);
        std::fs::create_dir_all(&outside).unwrap();
        let link = t.dir.join(sub);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(&outside, &link).unwrap();
        let e = t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap_err();
        assert!(
            matches!(&e, SharingError::Io { reason, .. } if reason.contains(&link.display().to_string()) && reason.contains("symbolic link")),
            "{sub}: {e:?}"
        );
        assert_eq!(e.op(), id);
        let written: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(written.is_empty(), "{sub}: written through the symlink: {written:?}");

        // Publish for real, then swap the directory for a link to where it went: load refuses it.
        std::fs::remove_file(&link).unwrap();
        t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
        t.store.load(id).unwrap();
        let moved = outside.join("moved");
        std::fs::rename(&link, &moved).unwrap();
        symlink(&moved, &link).unwrap();
        let e = t.store.load(id).unwrap_err();
        assert!(matches!(&e, SharingError::Io { reason, .. } if reason.contains("symbolic link")), "{sub}: load read through it: {e:?}");
        let _ = std::fs::remove_dir_all(&outside);
    }
    // A store whose root is a link (e.g. to another disk) works.
    let t = TempStore::new("root-link");
    let real = t.dir.with_extension("real");
    let _ = std::fs::remove_dir_all(&real);
    std::fs::create_dir_all(&real).unwrap();
    symlink(&real, &t.dir).unwrap();
    t.store.publish(&op, std::slice::from_ref(&receipt)).unwrap();
    assert_eq!(t.store.load(id).unwrap().receipts, vec![receipt]);
    assert!(real.join("cards").is_dir());
    std::fs::remove_file(&t.dir).unwrap();
    let _ = std::fs::remove_dir_all(&real);
}

/// Every leaf of `v` (and every non-empty array, to shorten it): (JSON pointer, path as
/// `OpCard`'s load error names it).
fn edit_points(v: &serde_json::Value, pointer: String, path: String, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| edit_points(x, format!("{pointer}/{k}"), join(k), out)),
        Value::Array(a) => {
            if !a.is_empty() {
                out.push((pointer.clone(), path.clone()));
            }
            a.iter().enumerate().for_each(|(i, x)| edit_points(x, format!("{pointer}/{i}"), format!("{path}[{i}]"), out));
        }
        _ => out.push((pointer, path)),
    }
}

/// `v` changed: a string lengthened, a number incremented, a boolean flipped, an array
/// shortened, a null made a string.
fn edit_value(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => s.push('x'),
        Value::Number(n) => {
            *v = n.as_u64().map(|u| serde_json::json!(u + 1)).unwrap_or_else(|| serde_json::json!(n.as_f64().unwrap_or(0.0) * 2.0 + 1.0))
        }
        Value::Bool(b) => *b = !*b,
        Value::Array(a) => drop(a.pop()),
        Value::Null => *v = serde_json::json!("x"),
        Value::Object(_) => {}
    }
}

/// Stores `card` (JSON) as the card of `id`'s index entry, every file consistent with its name.
fn restore_card(store: &Store, index: &IndexEntry, card: &str) {
    let mut index = index.clone();
    let id = index.op.clone();
    let blob = blob_hash(card.as_bytes());
    std::fs::write(store.blob_path(&blob), card).unwrap();
    index.card = blob;
    std::fs::write(store.index_path(&id).unwrap(), serde_json::to_string(&index).unwrap()).unwrap();
}

/// Every field of a stored card but its description is derived from what the identity covers
/// (the contract and the kernel bytes): a card edited in any of them, consistently re-stored
/// under its own hash, is refused at load naming the field, so it never shows the "verified ...
/// signed by a trusted key" lines; an edited description loads, shown as unverified text that
/// cannot forge another line of the card.
#[test]
fn a_card_edited_in_any_field_is_refused_and_an_edited_description_is_shown_unverified() {
    use op_runtime::trust::SigningKey;
    let t = TempStore::new("edited");
    // `builtin/add`: dtype variables (instances, cpu instances, kernel instances), WGSL and CUDA
    // kernels with entries, VJP kernels, a header.
    let key = SigningKey::from_secret_bytes(&[7; 32]);
    let receipt = cpu_receipt("builtin/add").signed(&key).unwrap();
    t.store.publish(&builtin_add(), std::slice::from_ref(&receipt)).unwrap();
    let mut trust = TrustList::new();
    trust.trust(key.public_key(), "publisher");
    let id = "builtin/add@1";
    let loaded = t.store.load(id).unwrap();
    let shown = loaded.card_for(&LocalDevices::host(), &trust).to_string();
    assert!(shown.contains("verified on") && shown.contains("signed by trusted key `publisher`"), "{shown}");
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(t.store.blob_path(&loaded.index.card)).unwrap()).unwrap();

    // The edits the issue names, then every leaf of the card.
    let mut edits: Vec<(String, serde_json::Value)> = Vec::new();
    let mut named = |path: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut c = stored.clone();
        f(&mut c);
        edits.push((path.to_string(), c));
    };
    named("kernels[0].entry", &|c| c["kernels"][0]["entry"] = "tampered_main".into());
    named("kernels[0].language", &|c| {
        c["kernels"][0]["language"] = if c["kernels"][0]["language"] == "wgsl" { "cuda" } else { "wgsl" }.into()
    });
    named("kernels[0].dtypes", &|c| c["kernels"][0]["dtypes"] = serde_json::json!(["T = f16", "T = f32"]));
    named("instances", &|c| drop(c["instances"].as_array_mut().unwrap().pop()));
    // add's cpu kernel serves every instance: one fewer is an edit.
    named("cpu_dtypes", &|c| drop(c["cpu_dtypes"].as_array_mut().unwrap().pop()));
    named(
        "trust",
        &|c| c["trust"][1]["trust"] = serde_json::json!({"verified": {"device": receipt.device, "receipt": receipt.digest, "attestation": "signed by trusted key `publisher`"}}),
    );
    let mut points = Vec::new();
    edit_points(&stored, String::new(), String::new(), &mut points);
    for (pointer, path) in points {
        let mut c = stored.clone();
        edit_value(c.pointer_mut(&pointer).unwrap());
        edits.push((path, c));
    }
    let (mut refused, mut unparsed) = (0, 0);
    for (path, card) in &edits {
        let text = serde_json::to_string_pretty(card).unwrap();
        if OpCard::from_json(&text).is_err() {
            unparsed += 1; // refused as "not a card" anyway
            continue;
        }
        restore_card(&t.store, &loaded.index, &text);
        match t.store.load(id) {
            Ok(l) => {
                assert!(
                    path.starts_with("description"),
                    "a card edited at `{path}` loaded:\n{}",
                    l.card_for(&LocalDevices::host(), &trust)
                );
            }
            Err(e) => {
                assert!(!path.starts_with("description"), "{e}");
                let top = path.split(['.', '[']).next().unwrap();
                assert!(
                    matches!(&e, SharingError::Corrupt { reason, .. } if reason.contains(&format!("`{top}")) && reason.contains("disagrees")),
                    "{path}: {e}"
                );
                refused += 1;
            }
        }
    }
    println!("{refused} edited cards refused naming the field, {unparsed} no longer parse as a card, of {} edits", edits.len());
    assert!(refused >= 50 && unparsed < refused, "refused {refused}, unparsed {unparsed} of {}", edits.len());

    // An edited description loads, as quoted unverified text: a forged trust line inside it
    // stays inside the quote, and the real trust lines are unchanged.
    let mut c = stored.clone();
    c["description"] =
        "Adds.\n  trust        cuda kernels/add.cu                 verified on cuda (signed by trusted key `publisher`)".into();
    restore_card(&t.store, &loaded.index, &serde_json::to_string_pretty(&c).unwrap());
    let shown_edited = t.store.load(id).unwrap().card_for(&LocalDevices::host(), &trust).to_string();
    assert!(shown_edited.contains("description  unverified text"), "{shown_edited}");
    for line in shown_edited.lines().filter(|l| l.contains("verified on cuda")) {
        assert!(line.starts_with("    | "), "a description line escaped its quote: {line:?}\n{shown_edited}");
    }
    let trust_lines = |s: &str| s.lines().skip_while(|l| !l.starts_with("  trust")).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(trust_lines(&shown_edited), trust_lines(&shown));
}
