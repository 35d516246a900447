//! `cargo op` as a script uses it: the binary run as cargo runs it (`cargo-op op ...`), each
//! subcommand's exit code and `--json` output, on records and stores made here from real
//! conformance runs (`--no-run` reads records instead of running the workspace's tests).

use op_runtime::catalog::CatalogEntry;
use op_runtime::report::{write_record, ConformanceRecord, CATALOG_DIR, CONFORMANCE_DIR};
use op_runtime::sharing::Store;
use op_runtime::trust::SigningKey;
use op_runtime::{conform, conform_all, op, BackendKind, OpHandle, Real};
use std::path::Path;
use std::process::Command;

/// `x + x`, publishable (licence, visibility), with a correct `cpu` kernel.
#[op(name = "user/cli/double", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0),
     backward = none, cpu = double_cpu, license = "MIT", visibility = workspace, generated_tests = false)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

/// Correct.
pub fn double_cpu(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v + v).collect()
}

/// `x + x` whose `cpu` kernel negates element 0: conformance rejects it.
#[op(name = "user/cli/double_broken", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0),
     backward = none, cpu = double_negating_first, generated_tests = false)]
pub fn double_broken<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

/// Wrong on purpose.
pub fn double_negating_first(x: &[f32]) -> Vec<f32> {
    let mut out: Vec<f32> = x.iter().map(|v| v + v).collect();
    if let Some(v) = out.first_mut() {
        *v = -*v - 1.0;
    }
    out
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn cargo_op(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-op")).arg("op").args(args).output().expect("cargo-op runs");
    Out {
        code: out.status.code().expect("exited"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json(o: &Out) -> serde_json::Value {
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("--json prints JSON ({e}): {}", o.stdout))
}

/// Writes `h`'s catalog entry and conformance record under `dir`.
fn record(dir: &Path, h: &OpHandle) {
    let entry = CatalogEntry::of_op(&h.op());
    write_record(dir, CATALOG_DIR, &op_runtime::report::record_name(&entry, "catalog"), &entry).expect("writes");
    let c = ConformanceRecord::of(h, &conform_all(h));
    write_record(dir, CONFORMANCE_DIR, &op_runtime::report::record_name(&c.op, "conformance"), &c).expect("writes");
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[test]
fn list_and_report_read_records_with_json_and_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, bad) = (dir.path().join("good"), dir.path().join("bad"));
    let double = op_runtime::register(&double::DECL).expect("registers");
    record(&good, &double);
    record(&bad, &double);
    record(&bad, &op_runtime::register(&double_broken::DECL).expect("registers"));

    let list = cargo_op(&["list", "--json", "--no-run", "--records", path(&good)]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let entries = json(&list);
    assert_eq!(entries[0]["id"], "user/cli/double@1");
    assert_eq!(entries[0]["identity"], double.op().hash_hex(), "the identity registration gives");

    let ok = cargo_op(&["report", "--json", "--no-run", "--records", path(&good), "--out", path(&dir.path().join("site-good"))]);
    assert_eq!(ok.code, 0, "every verdict passed: {}", ok.stderr);
    assert_eq!(json(&ok)["rejected"], 0);
    let text = cargo_op(&["report", "--no-run", "--records", path(&good), "--out", path(&dir.path().join("site-text"))]);
    assert!(text.stdout.trim_end().ends_with("index.html"), "prints the index's path: {}", text.stdout);

    let failed = cargo_op(&["report", "--json", "--no-run", "--records", path(&bad), "--out", path(&dir.path().join("site-bad"))]);
    assert_eq!(failed.code, 1, "a rejected kernel is exit code 1: {}", failed.stderr);
    let summary = json(&failed);
    assert_eq!((summary["ops"].as_u64(), summary["rejected"].as_u64()), (Some(2), Some(1)));
    assert!(Path::new(summary["index"].as_str().expect("the index")).is_file());

    let empty = cargo_op(&["report", "--no-run", "--records", path(&dir.path().join("none"))]);
    assert_eq!(empty.code, 3, "nothing to render is an error: {}", empty.stderr);
    assert!(empty.stderr.contains("no records"), "{}", empty.stderr);
}

#[test]
fn card_store_and_trust_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (records, store_dir, trust) = (dir.path().join("records"), dir.path().join("store"), dir.path().join("trust.txt"));
    let double = op_runtime::register(&double::DECL).expect("registers");
    record(&records, &double);
    let key = SigningKey::generate().expect("a key");
    let receipt = conform(&double, BackendKind::Reference).expect("conforms").signed(&key).expect("signs");
    Store::open(&store_dir).publish(&double.op(), &[receipt]).expect("publishes");

    // The card: the catalog's, with the store's signed receipt; trusted only once its key is.
    let card = |extra: &[&str]| {
        let mut args = vec!["card", "user/cli/double", "--json", "--no-run", "--records", path(&records), "--store", path(&store_dir)];
        args.extend(["--trust", path(&trust)]);
        args.extend(extra);
        cargo_op(&args)
    };
    let before = card(&[]);
    assert_eq!(before.code, 0, "{}", before.stderr);
    let c = json(&before);
    assert_eq!(c["receipts"].as_array().map(Vec::len), Some(1));
    assert!(c["trust"][0]["trust"].get("unverified").is_some(), "an unknown signer: {}", c["trust"][0]);
    let key_text = key.public_key().to_string();
    let add = cargo_op(&["trust", "add", &key_text, "the publisher", "--trust", path(&trust)]);
    assert_eq!(add.code, 0, "{}", add.stderr);
    let ls = json(&cargo_op(&["trust", "ls", "--json", "--trust", path(&trust)]));
    assert_eq!(ls["keys"][0]["label"], "the publisher");
    let after = json(&card(&[]));
    assert!(after["trust"][0]["trust"].get("verified").is_some(), "a trusted signer: {}", after["trust"][0]);
    assert_eq!(cargo_op(&["trust", "rm", &key_text, "--trust", path(&trust)]).code, 0);
    assert_eq!(cargo_op(&["trust", "rm", &key_text, "--trust", path(&trust)]).code, 1, "not trusted any more");
    assert_eq!(cargo_op(&["trust", "add", "ed25519:nothex", "x", "--trust", path(&trust)]).code, 3, "a malformed key");

    let missing = cargo_op(&["card", "user/cli/none", "--no-run", "--records", path(&records), "--store", path(&store_dir)]);
    assert_eq!(missing.code, 3, "{}", missing.stderr);

    // The store: listed and intact, then a tampered blob is found.
    let ls = cargo_op(&["store", "ls", "--json", "--store", path(&store_dir)]);
    assert_eq!(ls.code, 0, "{}", ls.stderr);
    assert_eq!(json(&ls)[0]["op"], "user/cli/double@1");
    assert_eq!(cargo_op(&["store", "verify", "--store", path(&store_dir)]).code, 0);
    let blob = std::fs::read_dir(store_dir.join("blobs")).expect("blobs").filter_map(Result::ok).map(|e| e.path()).next().expect("a blob");
    std::fs::write(&blob, b"tampered").expect("writes");
    let verify = cargo_op(&["store", "verify", "--json", "--store", path(&store_dir)]);
    assert_eq!(verify.code, 1, "a damaged entry is exit code 1: {}", verify.stdout);
    // Whichever blob the listing gave first (one the op's load reads or not), it is named.
    let v = json(&verify);
    assert_eq!(v["damaged_blobs"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["damaged_blobs"][0].as_str(), blob.to_str(), "{v}");
    assert!(v["damaged"].as_u64().is_some_and(|d| d <= 1), "{v}");
}

#[test]
fn bad_usage_is_exit_code_2() {
    assert_eq!(cargo_op(&["frobnicate"]).code, 2);
    assert_eq!(cargo_op(&["card"]).code, 2, "a missing argument");
    assert_eq!(cargo_op(&["--help"]).code, 0);
}
