//! Sharing: the store refuses private and unlicensed ops, round-trips published ones, refuses
//! tampered files naming the op and the file, loses no receipt and no card to concurrent
//! publishers (threads and processes), never follows a planted symlink, never panics on a
//! damaged file, and `repair` rebuilds index entries from the blobs. (Cards and trust:
//! `tests/trust.rs`.)

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::core::decl::OpDecl;
use op_runtime::core::op::OpSource;
use op_runtime::core::op::RegisteredOp;
use op_runtime::core::receipt::Receipt;
use op_runtime::core::trust::TrustList;
use op_runtime::verify::conformance::conform;
use op_runtime::verify::sharing::{blob_hash, IndexEntry, LocalDevices, OpCard, SharingError, Store};
use op_runtime::{op, BackendKind, OpHandle, Real, Registry};
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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

fn verified_here(loaded: &op_runtime::verify::sharing::LoadedCard) -> bool {
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
    assert_eq!(loaded.contract, op.contract);
    assert_eq!(loaded.contract_json, op.decl.contract_json);
    assert_eq!(loaded.body_tokens, op.decl.body_tokens);
    assert_eq!(loaded.kernels[0].source, op.decl.kernels[0].source);
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
        ("kernel `kernels/windowed_median.wgsl`", |s, i| s.blob_path(&i.kernels[0].source)),
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
    t.store.publish(&builtin_add(), &[]).unwrap();
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
    assert!(e.to_string().contains("kernels disagree"), "{e}");
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
    // Each thread also publishes a built-in's card every round, so cards race too.
    let builtins: Vec<Arc<RegisteredOp>> =
        op_runtime::registry().ops().into_iter().filter(|o| o.id.starts_with("builtin/") && o.vjp_of.is_none()).take(THREADS).collect();
    assert_eq!(builtins.len(), THREADS);
    std::thread::scope(|s| {
        for (th, builtin) in builtins.iter().enumerate() {
            let (store, op, base) = (&t.store, &op, &base);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    let r = variant(base, &format!("thread {th} round {round}"));
                    store.publish(op, &[r]).unwrap_or_else(|e| panic!("thread {th} round {round}: {e}"));
                    store.publish(builtin, &[]).unwrap_or_else(|e| panic!("thread {th} round {round}: {}: {e}", builtin.id));
                }
            });
        }
    });
    let loaded = t.store.load("test/sharing/median@1").unwrap();
    let tags: BTreeSet<String> = loaded.receipts.iter().map(|r| r.device.details["test.publisher"].clone()).collect();
    let want: BTreeSet<String> = (0..THREADS).flat_map(|th| (0..ROUNDS).map(move |r| format!("thread {th} round {r}"))).collect();
    assert_eq!(tags.len(), THREADS * ROUNDS, "missing: {:?}", want.difference(&tags).take(5).collect::<Vec<_>>());
    assert_eq!(tags, want);
    for b in &builtins {
        t.store.load(&b.id).unwrap_or_else(|e| panic!("{}: {e}", b.id));
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
    let children: Vec<_> = (0..PROCESSES)
        .map(|k| {
            std::process::Command::new(&exe)
                .args(["--exact", "child_publisher_role", "--test-threads=1", "--nocapture"])
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
    for op in [&median, &add, &double] {
        t.store.publish(op, if op.id == median.id { std::slice::from_ref(&receipt) } else { &[] }).unwrap();
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
