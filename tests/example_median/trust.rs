//! Trust: a card shows trust per declared kernel (reference, cpu, each GPU kernel), each verified
//! only by a passing receipt from its own backend for this content on this device; receipts can
//! be signed, and a trust list decides whose receipts count on another machine; forged,
//! unknown-key and tampered receipts are refused with distinct typed errors; received receipts,
//! cards and provenance never make the runtime panic.

use crate::common;
use crate::median;

use op_runtime::conformance::conform;
use op_runtime::device::{fingerprint, DeviceProfile};
use op_runtime::provenance::ProvenanceRecord;
use op_runtime::receipt::{Attestation, Receipt, ReceiptError};
use op_runtime::sharing::{IndexEntry, LocalDevices, OpCard, Store, Trust};
use op_runtime::trust::{SigningKey, TrustList};
use op_runtime::{op, BackendKind, CallOptions, OpHandle, Real, Registry, Scalar, Tensor};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The windowed median with every kind of kernel: the reference, a `cpu =` kernel, a WGSL
/// kernel and a CUDA kernel.
#[op(
    name = "test/trust/median", version = 1,
    signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
    category = selection, tolerance = exact, backward = none,
    cpu = median_cpu,
    kernel(wgsl = "examples/windowed_median/kernels/windowed_median.wgsl",
           bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1),
    kernel(cuda = "examples/windowed_median/kernels/windowed_median.cu",
           bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1, block = 128),
    license = "MIT", visibility = workspace,
)]
pub fn trusted_median<T: Real>(x: &[T], w: u32) -> Vec<T> {
    median::windowed_median(x, w)
}

/// The fast CPU kernel of `trusted_median`.
pub fn median_cpu(x: &[f32], w: u32) -> Vec<f32> {
    median::windowed_median(x, w)
}

fn handle() -> OpHandle {
    Registry::new().register(&trusted_median::DECL).expect("registers")
}

fn host(kind: BackendKind) -> DeviceProfile {
    DeviceProfile::host(kind)
}

/// The same device model on another machine.
fn other_machine(p: &DeviceProfile) -> DeviceProfile {
    DeviceProfile { instance: Some(fingerprint("a different machine")), ..p.clone() }
}

/// A GPU we do not have.
fn some_gpu() -> DeviceProfile {
    DeviceProfile {
        backend: BackendKind::Wgpu,
        adapter: "Some GPU".into(),
        driver: "1.0".into(),
        vendor_id: 0x10de,
        device_id: 0x2335,
        details: Default::default(),
        instance: Some(fingerprint("gpu box")),
    }
}

/// `r` re-minted (digest recomputed) as if it came from `backend` on `device`.
fn as_if(r: &Receipt, backend: BackendKind, device: DeviceProfile) -> Receipt {
    let mut r = r.clone();
    r.backend = backend;
    r.device = device;
    r.signature = None;
    r.digest = r.compute_digest();
    r
}

fn trust_of(card: &OpCard, kind: BackendKind) -> &Trust {
    card.trust_of(kind).unwrap_or_else(|| panic!("the card declares a {kind} kernel:\n{card}"))
}

fn reason(t: &Trust) -> &str {
    match t {
        Trust::Unverified { reason } => reason,
        Trust::Verified { .. } => panic!("expected unverified, got {t:?}"),
    }
}

#[test]
fn a_reference_receipt_verifies_the_reference_and_nothing_else() {
    let h = handle();
    let op = h.op();
    let r = conform(&h, BackendKind::Reference).expect("the reference conforms to itself");
    let devices = LocalDevices::host().with(BackendKind::Wgpu, some_gpu());
    let card = OpCard::of(&op, std::slice::from_ref(&r), &devices, &TrustList::new());
    println!("{card}");
    let kernels: Vec<(BackendKind, &str)> = card.trust.iter().map(|k| (k.backend, k.kernel.as_str())).collect();
    assert_eq!(
        kernels,
        vec![
            (BackendKind::Reference, "reference"),
            (BackendKind::Cpu, "median_cpu"),
            (BackendKind::Wgpu, "examples/windowed_median/kernels/windowed_median.wgsl"),
            (BackendKind::Cuda, "examples/windowed_median/kernels/windowed_median.cu"),
        ],
        "one trust line per declared kernel"
    );
    assert!(
        matches!(trust_of(&card, BackendKind::Reference), Trust::Verified { device, attestation, .. }
            if *device == host(BackendKind::Reference) && attestation.contains("minted on this machine")),
        "{card}"
    );
    let cpu = reason(trust_of(&card, BackendKind::Cpu));
    assert!(cpu.contains("no cpu receipt") && cpu.contains("verify only their own kernels"), "{cpu}");
    let wgpu = reason(trust_of(&card, BackendKind::Wgpu));
    assert!(wgpu.contains("no wgpu receipt"), "a GPU kernel without a receipt for this device is unverified: {wgpu}");
    let cuda = reason(trust_of(&card, BackendKind::Cuda));
    assert!(cuda.contains("no cuda device"), "{cuda}");
    assert!(!card.fully_verified());
    let text = card.to_string();
    assert!(text.contains("reference") && text.contains("verified on reference"), "{text}");
    assert!(
        text.contains("wgpu examples/windowed_median/kernels/windowed_median.wgsl") && text.contains("unverified: no wgpu receipt"),
        "{text}"
    );
    assert_eq!(OpCard::from_json(&card.to_json()).unwrap(), card);
}

#[test]
fn each_kernel_is_verified_by_a_receipt_from_its_own_backend_on_this_device() {
    let h = handle();
    let op = h.op();
    let reference = conform(&h, BackendKind::Reference).expect("reference conforms");
    let cpu = conform(&h, BackendKind::Cpu).expect("the cpu kernel conforms");
    assert_eq!(cpu.device, host(BackendKind::Cpu));
    let mut receipts = vec![reference, cpu];
    let mut devices = LocalDevices::host();
    if common::wgpu_available() {
        receipts.push(conform(&h, BackendKind::Wgpu).expect("the WGSL kernel conforms"));
        devices = LocalDevices::of(h.registry());
    }
    let card = OpCard::of(&op, &receipts, &devices, &TrustList::new());
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        assert!(trust_of(&card, kind).is_verified(), "{kind}:\n{card}");
    }
    if devices.get(BackendKind::Wgpu).is_some() {
        assert!(trust_of(&card, BackendKind::Wgpu).is_verified(), "{card}");
    }
    assert!(!trust_of(&card, BackendKind::Cuda).is_verified(), "no CUDA receipt: {card}");

    // A wgpu receipt from another GPU leaves this machine's WGSL kernel unverified, naming
    // what differs; and verifies it on that GPU.
    let foreign = as_if(&receipts[0], BackendKind::Wgpu, some_gpu());
    let mine = DeviceProfile { adapter: "Another GPU".into(), ..some_gpu() };
    let card = OpCard::of(&op, std::slice::from_ref(&foreign), &LocalDevices::new().with(BackendKind::Wgpu, mine), &TrustList::new());
    let why = reason(trust_of(&card, BackendKind::Wgpu));
    assert!(why.contains("not on this device") && why.contains("adapter: `Some GPU` vs `Another GPU`"), "{why}");
    let there = LocalDevices::new().with(BackendKind::Wgpu, some_gpu());
    assert!(trust_of(&OpCard::of(&op, std::slice::from_ref(&foreign), &there, &TrustList::new()), BackendKind::Wgpu).is_verified());
    // A receipt labelled as another backend's never verifies this one's kernel.
    let mislabelled = as_if(&receipts[1], BackendKind::Reference, host(BackendKind::Cpu));
    let card = OpCard::of(&op, &[mislabelled], &LocalDevices::host(), &TrustList::new());
    assert!(!trust_of(&card, BackendKind::Reference).is_verified() && !trust_of(&card, BackendKind::Cpu).is_verified(), "{card}");
}

#[test]
fn a_signed_receipt_from_a_trusted_key_counts_on_another_machine_an_unsigned_one_only_where_minted() {
    let h = handle();
    let op = h.op();
    let here = host(BackendKind::Reference);
    let there = other_machine(&here);
    assert_ne!(here, there);
    let unsigned = conform(&h, BackendKind::Reference).unwrap();
    let key = SigningKey::from_secret_bytes(&[1; 32]);
    let signed = unsigned.clone().signed(&key).unwrap();
    let mut trust = TrustList::new();
    trust.trust(key.public_key(), "ci runner");

    // Unsigned: counts where minted, refused on another machine of the same model.
    assert_eq!(unsigned.verify_with(&op, &here, &trust), Ok(Attestation::Minted));
    let e = unsigned.verify_with(&op, &there, &trust).unwrap_err();
    assert!(matches!(&e, ReceiptError::Unsigned { reason, .. } if reason.contains("instance")), "{e}");
    // Signed by a trusted key: counts there too.
    assert_eq!(signed.verify_with(&op, &there, &trust), Ok(Attestation::Signed { key: key.public_key(), label: "ci runner".into() }));
    assert_eq!(signed.signer(), Some(key.public_key()));
    // ... but not on another device model: a signature does not stretch a receipt.
    let mut newer = there.clone();
    newer.details.insert("rustc".into(), "rustc 9.9.9".into());
    assert!(matches!(signed.verify_with(&op, &newer, &trust), Err(ReceiptError::Device { .. })));

    let on_there = LocalDevices::new().with(BackendKind::Reference, there.clone());
    let card = OpCard::of(&op, &[unsigned.clone(), signed.clone()], &on_there, &trust);
    assert!(
        matches!(trust_of(&card, BackendKind::Reference), Trust::Verified { attestation, .. } if attestation.contains("ci runner")),
        "{card}"
    );
    let card = OpCard::of(&op, std::slice::from_ref(&unsigned), &on_there, &trust);
    assert!(reason(trust_of(&card, BackendKind::Reference)).contains("unsigned"), "{card}");

    // A trust list may require signatures everywhere.
    let mut strict = trust.clone();
    strict.require_signatures(true);
    assert!(matches!(unsigned.verify_with(&op, &here, &strict), Err(ReceiptError::Unsigned { .. })));
    assert!(signed.verify_with(&op, &here, &strict).is_ok());
    // Receipts survive JSON with their signature.
    assert_eq!(Receipt::from_json(&signed.to_json()).unwrap(), signed);
}

#[test]
fn forged_unknown_key_and_tampered_receipts_are_refused_with_distinct_errors() {
    let h = handle();
    let op = h.op();
    let here = host(BackendKind::Reference);
    let there = other_machine(&here);
    let trusted = SigningKey::from_secret_bytes(&[1; 32]);
    let stranger = SigningKey::from_secret_bytes(&[2; 32]);
    let mut trust = TrustList::new();
    trust.trust(trusted.public_key(), "ci");
    let good = conform(&h, BackendKind::Reference).unwrap().signed(&trusted).unwrap();
    good.verify_with(&op, &there, &trust).expect("the genuine receipt counts");

    // Forged: the signature's bytes altered.
    let mut forged = good.clone();
    let sig = forged.signature.as_mut().unwrap();
    let flipped = if sig.signature.starts_with('0') { "1" } else { "0" };
    sig.signature.replace_range(0..1, flipped);
    // Forged: signed by a stranger, claiming the trusted key.
    let mut claimed = stranger_signed(&good, &stranger);
    claimed.signature.as_mut().unwrap().key = trusted.public_key().to_string();
    // Unknown key: genuinely signed (re-signed) by a key not on the trust list.
    let resigned = stranger_signed(&good, &stranger);
    // Tampered: a field changed after minting, digest left alone / recomputed.
    let mut tampered = good.clone();
    tampered.cases += 1;
    let mut redigested = tampered.clone();
    redigested.digest = redigested.compute_digest();
    // Malformed signature fields (non-ASCII, wrong length) are forgeries too, never a panic.
    let mut garbled = good.clone();
    garbled.signature.as_mut().unwrap().signature = "é".repeat(64);
    let mut bad_key = good.clone();
    bad_key.signature.as_mut().unwrap().key = "ed25519:ü".into();

    type Case<'a> = (&'a str, &'a Receipt, fn(&ReceiptError) -> bool, &'a str);
    let cases: [Case<'_>; 7] = [
        ("altered signature", &forged, |e| matches!(e, ReceiptError::BadSignature { .. }), "forged signature"),
        ("stranger claiming the trusted key", &claimed, |e| matches!(e, ReceiptError::BadSignature { .. }), "forged signature"),
        ("re-signed by an unknown key", &resigned, |e| matches!(e, ReceiptError::UntrustedSigner { .. }), "not on your trust list"),
        ("tampered field", &tampered, |e| matches!(e, ReceiptError::Digest { .. }), "tampered with"),
        ("tampered field, digest recomputed", &redigested, |e| matches!(e, ReceiptError::BadSignature { .. }), "forged signature"),
        ("garbled signature", &garbled, |e| matches!(e, ReceiptError::BadSignature { .. }), "128 hex digits"),
        ("garbled key", &bad_key, |e| matches!(e, ReceiptError::BadSignature { .. }), "forged signature"),
    ];
    for (what, r, is, says) in cases {
        for device in [&here, &there] {
            let e = r.verify_with(&op, device, &trust).expect_err(what);
            assert!(is(&e), "{what}: wrong error {e:?}");
            assert!(e.to_string().contains(says) && e.to_string().contains("test/trust/median@1"), "{what}: {e}");
        }
        // Never on a card, never trusted.
        let card = OpCard::of(&op, std::slice::from_ref(r), &LocalDevices::host(), &trust);
        assert!(!trust_of(&card, BackendKind::Reference).is_verified(), "{what}: {card}");
    }
    if let Err(ReceiptError::UntrustedSigner { key, .. }) = resigned.verify_with(&op, &here, &trust) {
        assert_eq!(key, stranger.public_key());
    }
    // A key vouches only for an intact receipt.
    assert!(matches!(tampered.clone().sign(&trusted), Err(ReceiptError::Digest { .. })));
}

fn stranger_signed(r: &Receipt, key: &SigningKey) -> Receipt {
    r.clone().signed(key).unwrap()
}

#[test]
fn signed_receipts_travel_through_a_store_and_count_only_with_the_signer_trusted() {
    let scratch = tempfile::Builder::new().prefix("op-trust-travel-").tempdir().expect("a scratch directory");
    let store = Store::open(scratch.path().join("store"));
    let h = handle();
    let key = SigningKey::from_secret_bytes(&[3; 32]);
    let signed = conform(&h, BackendKind::Reference).unwrap().signed(&key).unwrap();
    store.publish(&h.op(), std::slice::from_ref(&signed)).unwrap();
    // The loader: another machine of the same model.
    let loaded = store.load("test/trust/median@1").unwrap();
    assert_eq!(loaded.receipts, vec![signed]);
    let elsewhere = LocalDevices::new().with(BackendKind::Reference, other_machine(&host(BackendKind::Reference)));
    assert!(!loaded.verified(BackendKind::Reference, &elsewhere, &TrustList::new()), "an unknown signer does not count");
    let mut trust = TrustList::new();
    trust.trust(key.public_key(), "publisher");
    assert!(loaded.verified(BackendKind::Reference, &elsewhere, &trust));
    assert!(!loaded.verified(BackendKind::Cpu, &elsewhere, &trust), "a reference receipt verifies only the reference");
}

// ---- received JSON never panics ------------------------------------------------------------

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Strings that have broken parsers and `&s[..n]` slicing before.
const NASTY: [&str; 10] =
    ["é", "\u{10ffff}", "😀😀", "\u{0}", "\\u0000", "ffffffffffffffffffffffffffffffff", "-1", "1e999", "null", "[[[[[["];

/// `text` mutated by one of: a bit flip, a truncation, a deleted or duplicated span, a nasty
/// insertion, a string value replaced by multibyte text of the same byte length.
fn mutate(text: &str, rng: &mut Rng) -> String {
    if text.is_empty() {
        // (A truncation may leave nothing; a second mutation of nothing is nothing.)
        return String::new();
    }
    let mut b = text.as_bytes().to_vec();
    if b.is_empty() {
        // A truncation left nothing to mutate: start again from a nasty string.
        return NASTY[rng.below(NASTY.len())].to_string();
    }
    let at = rng.below(b.len());
    match rng.below(6) {
        // (an input mutated to nothing has no byte to flip)
        0 if !b.is_empty() => b[at] ^= 1 << rng.below(8),
        0 => {}
        1 => b.truncate(at),
        2 => {
            let end = (at + 1 + rng.below(16)).min(b.len());
            b.drain(at..end);
        }
        3 => {
            let end = (at + 1 + rng.below(32)).min(b.len());
            let span = b[at..end].to_vec();
            b.splice(at..at, span);
        }
        4 => {
            let nasty = NASTY[rng.below(NASTY.len())];
            b.splice(at..at, nasty.bytes());
        }
        _ => {
            // Replace the contents of the string at or after `at` with two-byte characters.
            if let Some(open) = b[at..].iter().position(|&c| c == b'"').map(|p| p + at) {
                if let Some(close) = b[open + 1..].iter().position(|&c| c == b'"').map(|p| p + open + 1) {
                    let n = close - open - 1;
                    let mut s = "é".repeat(n / 2).into_bytes();
                    if n % 2 == 1 {
                        s.push(b'x');
                    }
                    b.splice(open + 1..close, s);
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Runs `f` on `rounds` mutations of `seed_text`; a panic fails naming the input.
fn fuzz(what: &str, seed_text: &str, rounds: usize, f: impl Fn(&str)) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed_text.len() as u64);
    for i in 0..rounds {
        let input = mutate(seed_text, &mut rng);
        // Mutate some inputs twice more.
        let input = if i % 3 == 0 { mutate(&input, &mut rng) } else { input };
        if catch_unwind(AssertUnwindSafe(|| f(&input))).is_err() {
            panic!("{what}: panicked on input #{i}:\n{input}");
        }
    }
}

#[test]
fn received_receipts_cards_provenance_and_index_entries_never_panic() {
    let h = handle();
    let op = h.op();
    let key = SigningKey::from_secret_bytes(&[4; 32]);
    let mut trust = TrustList::new();
    trust.trust(key.public_key(), "k");
    let receipt = conform(&h, BackendKind::Reference).unwrap().signed(&key).unwrap();
    let devices = LocalDevices::host();
    let card = OpCard::of(&op, std::slice::from_ref(&receipt), &devices, &trust);
    let out = h.call_with(&[&Tensor::vector(vec![3.0f32, 1.0, 2.0])], &[Scalar::U32(1)], CallOptions::on(BackendKind::Cpu)).expect("runs");
    let record = ProvenanceRecord { entries: vec![out.provenance.clone()], ..Default::default() };

    fuzz("receipt", &receipt.to_json(), 3000, |s| {
        if let Ok(r) = Receipt::from_json(s) {
            let _ = r.verify_with(&op, &host(BackendKind::Reference), &trust);
            let _ = r.check_intact();
            let _ = r.signer();
            let _ = format!("{r:?}");
            let _ = OpCard::of(&op, &[r], &devices, &trust).to_string();
        }
    });
    fuzz("card", &card.to_json(), 3000, |s| {
        if let Ok(c) = OpCard::from_json(s) {
            let _ = c.to_string();
            let _ = c.for_devices(&devices, &trust).to_string();
        }
    });
    fuzz("provenance", &record.to_json(), 3000, |s| {
        if let Ok(p) = ProvenanceRecord::from_json(s) {
            let _ = p.to_string();
        }
    });
    let index = serde_json::json!({
        "format": 2, "op": "test/trust/median@1", "content_hash": op.hash_hex(), "card": "a".repeat(64),
        "contract": "b".repeat(64), "body": "c".repeat(64),
        "kernels": [{"path": "examples/windowed_median/kernels/windowed_median.wgsl", "source": "d".repeat(64), "headers": [{"path": "h.cuh", "blob": "e".repeat(64)}]}],
    })
    .to_string();
    assert!(IndexEntry::from_json(&index).is_ok());
    fuzz("index entry", &index, 3000, |s| {
        let _ = IndexEntry::from_json(s);
    });
    fuzz("trust list", &trust.to_text(), 1000, |s| {
        let _ = TrustList::parse(s);
    });
}

#[test]
fn provenance_with_non_ascii_hashes_and_receipts_is_a_typed_error_or_prints() {
    let h = handle();
    let out = h.call_with(&[&Tensor::vector(vec![3.0f32, 1.0, 2.0])], &[Scalar::U32(1)], CallOptions::on(BackendKind::Cpu)).expect("runs");
    let mut entry = serde_json::to_value(&out.provenance).unwrap();
    // A 64-byte hash made of 32 two-byte characters: the length check alone would pass it.
    entry["content_hash"] = serde_json::Value::String("é".repeat(32));
    let text = serde_json::json!({ "entries": [entry.clone()] }).to_string();
    let e = ProvenanceRecord::from_json(&text).unwrap_err();
    assert!(e.to_string().contains("64 hex digits"), "{e}");
    // A receipt digest with a multibyte character across the 16-byte display cut.
    entry["content_hash"] = serde_json::Value::String(h.op().hash_hex());
    entry["receipt"] = serde_json::Value::String(format!("{}é{}", "a".repeat(15), "b".repeat(40)));
    let record = ProvenanceRecord::from_json(&serde_json::json!({ "entries": [entry] }).to_string()).expect("parses");
    assert!(record.to_string().contains("aaaaaaaaaaaaaaaé"), "{record}");
}
