//! Canonical encoding and identity. The identity of an op is
//!
//! ```text
//! blake3( "op-identity/1\n"
//!         ‖ frame(contract_json)          -- serde_json of `Contract`, fixed field order, no spaces
//!         ‖ frame(body_tokens)            -- the reference fn's signature and block, one token
//!                                            per space-separated word (op-spec's `canonical_tokens`)
//!         ‖ u64le(kernel count)
//!         ‖ for each kernel in declaration order:
//!               frame(path) ‖ frame(bytes) ‖ u64le(header count)
//!               ‖ for each `#include`d header, sorted by path: frame(path) ‖ frame(bytes) )
//! ```
//!
//! where `frame(b) = u64le(len(b)) ‖ b`. Whitespace, comments and attribute key order do not
//! change it (the contract is rebuilt from the parsed model; tokens carry no layout); any byte of
//! the contract, the reference body or a kernel does. This module computes and must not decide
//! anything.

use crate::contract::Contract;

/// Version tag of the identity encoding.
pub const IDENTITY_TAG: &[u8] = b"op-identity/1\n";

/// The canonical JSON text of a contract.
pub fn contract_json(c: &Contract) -> String {
    // Serialising plain structs and enums to a String cannot fail.
    serde_json::to_string(c).unwrap_or_default()
}

/// One kernel's bytes as hashed: (path, source bytes, sorted headers as (path, bytes)).
pub struct KernelBytes<'a> {
    /// The kernel path as declared.
    pub path: &'a str,
    /// The kernel source bytes.
    pub bytes: &'a [u8],
    /// Included headers as (path, bytes); sorted before hashing.
    pub headers: Vec<(&'a str, &'a [u8])>,
}

fn frame(h: &mut blake3::Hasher, b: &[u8]) {
    h.update(&(b.len() as u64).to_le_bytes());
    h.update(b);
}

/// The identity hash (see the module documentation for the exact encoding).
pub fn identity(contract_json: &str, body_tokens: &str, kernels: &[KernelBytes<'_>]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(IDENTITY_TAG);
    frame(&mut h, contract_json.as_bytes());
    frame(&mut h, body_tokens.as_bytes());
    h.update(&(kernels.len() as u64).to_le_bytes());
    for k in kernels {
        frame(&mut h, k.path.as_bytes());
        frame(&mut h, k.bytes);
        let mut headers = k.headers.clone();
        headers.sort_by(|a, b| a.0.cmp(b.0));
        h.update(&(headers.len() as u64).to_le_bytes());
        for (p, b) in headers {
            frame(&mut h, p.as_bytes());
            frame(&mut h, b);
        }
    }
    *h.finalize().as_bytes()
}

/// Version tag of the placed identity (code identity plus the declaring module).
pub const PLACED_TAG: &[u8] = b"op-identity/placed/1\n";

/// An op's identity: its code identity ([`identity`], computed at compile time) placed in the
/// module it is declared in (`module`, relative to its crate, e.g. `builtins::elementwise`),
/// the context its names resolve in. Two declarations whose code reads the same but resolves
/// in different modules are two identities even where the macro could not tell which helper a
/// name resolves to (a declaration written by a `macro_rules!`); moving a declaration to
/// another module gives it a new identity (an over-approximation, never an omission).
pub fn placed(code: &[u8; 32], module: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(PLACED_TAG);
    h.update(code);
    frame(&mut h, module.as_bytes());
    *h.finalize().as_bytes()
}

/// The module path of a declaration relative to its crate: `module_path!()` of the module
/// `#[op]` generates (`crate::a::b::op_fn`) without the crate's name and the op's own segment.
pub fn crate_relative_module(generated: &str) -> &str {
    let inner = generated.split_once("::").map_or("", |(_, rest)| rest);
    inner.rsplit_once("::").map_or("", |(parent, _)| parent)
}

/// The hash a 64-digit hex string spells (either case); `None` for anything else, never a
/// panic (non-ASCII text included).
pub fn parse_hex(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = digit(b[2 * i])? << 4 | digit(b[2 * i + 1])?;
    }
    Some(out)
}

/// Lowercase hex of a hash.
pub fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_anything_else_without_panicking() {
        let h: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        assert_eq!(parse_hex(&hex(&h)), Some(h));
        assert_eq!(parse_hex(&hex(&h).to_uppercase()), Some(h));
        assert_eq!(parse_hex(&hex(&h)[1..]), None);
        assert_eq!(parse_hex(&format!("{}g", &hex(&h)[1..])), None);
        // Multi-byte characters: 64 bytes, but no valid digit pair boundary.
        assert_eq!(parse_hex(&"é".repeat(32)), None);
        assert_eq!(parse_hex(&format!("{}é{}", &hex(&h)[..31], &hex(&h)[..31])), None);
    }

    #[test]
    fn placement_changes_the_identity_and_the_module_is_crate_relative() {
        let code = identity("{}", "fn f", &[]);
        assert_ne!(placed(&code, "a"), placed(&code, "b"));
        assert_eq!(placed(&code, "a"), placed(&code, "a"));
        assert_ne!(placed(&code, "a"), code);
        assert_eq!(crate_relative_module("my_crate::ops::median::windowed_median"), "ops::median");
        assert_eq!(crate_relative_module("my_crate::windowed_median"), "");
        assert_eq!(crate_relative_module("my_crate"), "");
    }

    #[test]
    fn identity_frames_every_part() {
        let k = |b: &'static [u8]| vec![KernelBytes { path: "k.wgsl", bytes: b, headers: vec![] }];
        let base = identity("{}", "fn f", &k(b"abc"));
        assert_eq!(base, identity("{}", "fn f", &k(b"abc")));
        assert_ne!(base, identity("{}", "fn f", &k(b"abd")));
        assert_ne!(base, identity("{} ", "fn f", &k(b"abc")));
        assert_ne!(base, identity("{}", "fn g", &k(b"abc")));
        // Framing: moving a byte across a boundary changes the hash.
        assert_ne!(identity("ab", "c", &[]), identity("a", "bc", &[]));
        let with_header = vec![KernelBytes { path: "k.cu", bytes: b"x", headers: vec![("h.cuh", b"1")] }];
        let other_header = vec![KernelBytes { path: "k.cu", bytes: b"x", headers: vec![("h.cuh", b"2")] }];
        assert_ne!(identity("{}", "", &with_header), identity("{}", "", &other_header));
    }
}
