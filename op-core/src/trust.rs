//! Receipt signing keys (ed25519) and the trust list deciding whose signed receipts count.
//! Keys live where the caller says: every function takes an explicit path or value, nothing
//! here reads an environment variable or picks a default location. Owns key files and the
//! trust-list format; what a signature attests is `receipt`'s business.
//!
//! Files (UTF-8 text, `#` starts a comment line):
//! - signing key, created exclusively with mode 0600 and refused on load when group- or
//!   world-accessible:
//!   ```text
//!   op-runtime receipt signing key v1
//!   secret <64 hex digits>
//!   public ed25519:<64 hex digits>
//!   ```
//! - trust list, one trusted public key per line, optionally followed by a label:
//!   ```text
//!   # keys whose receipts count on this machine
//!   ed25519:<64 hex digits> ci-gpu-runner
//!   ```

use crate::files::{self, Replace};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// First line of a signing key file.
pub const SIGNING_KEY_HEADER: &str = "op-runtime receipt signing key v1";

/// Largest key or trust-list file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Why a key or trust list could not be made, read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A file could not be read or written.
    #[error("cannot {action} `{}`: {reason}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// What was attempted.
        action: &'static str,
        /// The operating system's reason.
        reason: String,
    },
    /// The text is not a key, a public key or a trust list.
    #[error("{}line {line}: {reason}", file.as_ref().map(|f| format!("`{}` ", f.display())).unwrap_or_default())]
    Malformed {
        /// The file, when read from one.
        file: Option<PathBuf>,
        /// 1-based line (0: the text as a whole).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A signing key file that others may read.
    #[error("signing key `{}` has mode {mode:o}; it must be readable by its owner only (chmod 600)", file.display())]
    Permissions {
        /// The key file.
        file: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The operating system's random source failed.
    #[error("cannot draw a random signing key: {0}")]
    Random(String),
}

/// An ed25519 public key, written `ed25519:<64 hex digits>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey([u8; 32]);

impl PublicKey {
    /// The key's 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Parses `ed25519:<64 hex digits>`; any other text is `Malformed` (never a panic).
    pub fn parse(text: &str) -> Result<PublicKey, KeyError> {
        let bad = |reason: &str| KeyError::Malformed { file: None, line: 0, reason: reason.to_string() };
        let hex = text.trim().strip_prefix("ed25519:").ok_or_else(|| bad("a public key is written `ed25519:<64 hex digits>`"))?;
        let bytes = op_contract::identity::parse_hex(hex).ok_or_else(|| bad("the key after `ed25519:` must be 64 hex digits"))?;
        ed25519_dalek::VerifyingKey::from_bytes(&bytes).map_err(|_| bad("not a valid ed25519 public key"))?;
        Ok(PublicKey(bytes))
    }

    #[doc(hidden)]
    pub fn verifying_key(&self) -> Result<ed25519_dalek::VerifyingKey, String> {
        ed25519_dalek::VerifyingKey::from_bytes(&self.0).map_err(|_| "not a valid ed25519 public key".to_string())
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ed25519:{}", op_contract::identity::hex(&self.0))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl std::str::FromStr for PublicKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<PublicKey, KeyError> {
        PublicKey::parse(s)
    }
}

/// A secret ed25519 key that signs receipts. Its `Debug` shows the public key only.
#[derive(Clone)]
pub struct SigningKey {
    inner: ed25519_dalek::SigningKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({})", self.public_key())
    }
}

impl SigningKey {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<SigningKey, KeyError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(SigningKey::from_secret_bytes(&secret))
    }

    /// The key with these 32 secret bytes (deterministic: for tests and key escrow).
    pub fn from_secret_bytes(secret: &[u8; 32]) -> SigningKey {
        SigningKey { inner: ed25519_dalek::SigningKey::from_bytes(secret) }
    }

    /// The public half, to put in other machines' trust lists.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.inner.verifying_key().to_bytes())
    }

    /// Generates a key and writes it to `path`, created exclusively (an existing file, or a
    /// symlink, is never overwritten) with mode 0600.
    pub fn create(path: &Path) -> Result<SigningKey, KeyError> {
        let key = SigningKey::generate()?;
        files::create_new(path, key.to_text().as_bytes(), 0o600).map_err(|e| KeyError::Io {
            file: path.to_path_buf(),
            action: "create",
            reason: e.to_string(),
        })?;
        Ok(key)
    }

    /// Reads a key written by [`SigningKey::create`]; refuses a symlink, a file others may read
    /// (Unix), and any text that is not a key whose public line matches its secret.
    pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
        let io = |action, e: std::io::Error| KeyError::Io { file: path.to_path_buf(), action, reason: e.to_string() };
        let file = files::open_regular(path).map_err(|e| io("open", e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = file.metadata().map_err(|e| io("inspect", e))?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(KeyError::Permissions { file: path.to_path_buf(), mode });
            }
        }
        drop(file);
        let bytes = files::read_regular(path, MAX_FILE_BYTES).map_err(|e| io("read", e))?;
        let text = String::from_utf8(bytes).map_err(|_| KeyError::Malformed {
            file: Some(path.to_path_buf()),
            line: 0,
            reason: "a signing key file is UTF-8 text".into(),
        })?;
        SigningKey::parse(&text).map_err(|e| match e {
            KeyError::Malformed { line, reason, .. } => KeyError::Malformed { file: Some(path.to_path_buf()), line, reason },
            other => other,
        })
    }

    fn to_text(&self) -> String {
        format!("{SIGNING_KEY_HEADER}\nsecret {}\npublic {}\n", op_contract::identity::hex(self.inner.as_bytes()), self.public_key())
    }

    fn parse(text: &str) -> Result<SigningKey, KeyError> {
        let bad = |line: usize, reason: &str| KeyError::Malformed { file: None, line, reason: reason.to_string() };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        match lines.next() {
            Some((_, l)) if l == SIGNING_KEY_HEADER => {}
            Some((n, _)) => return Err(bad(n, &format!("expected `{SIGNING_KEY_HEADER}`"))),
            None => return Err(bad(0, "empty file")),
        }
        let (n, secret) = lines.next().ok_or_else(|| bad(0, "no `secret` line"))?;
        let secret = secret.strip_prefix("secret ").ok_or_else(|| bad(n, "expected `secret <64 hex digits>`"))?;
        let secret = op_contract::identity::parse_hex(secret.trim()).ok_or_else(|| bad(n, "the secret must be 64 hex digits"))?;
        let key = SigningKey::from_secret_bytes(&secret);
        let (n, public) = lines.next().ok_or_else(|| bad(0, "no `public` line"))?;
        let public = public.strip_prefix("public ").ok_or_else(|| bad(n, "expected `public ed25519:<64 hex digits>`"))?;
        let public = PublicKey::parse(public).map_err(|_| bad(n, "the public key is not `ed25519:<64 hex digits>`"))?;
        if public != key.public_key() {
            return Err(bad(n, "the public key does not belong to the secret key (the file is damaged)"));
        }
        if let Some((n, _)) = lines.next() {
            return Err(bad(n, "unexpected text after the public key"));
        }
        Ok(key)
    }

    #[doc(hidden)]
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer;
        self.inner.sign(message).to_bytes()
    }
}

/// The public keys whose signed receipts count on this machine, each with a label. Also says
/// whether unsigned receipts count at all (on the machine that minted them; default yes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustList {
    keys: BTreeMap<PublicKey, String>,
    require_signatures: bool,
}

impl TrustList {
    /// An empty list: no signed receipt counts; unsigned ones count on their minting machine.
    pub fn new() -> TrustList {
        TrustList::default()
    }

    /// Trusts `key` under `label` (replacing its label if already trusted).
    pub fn trust(&mut self, key: PublicKey, label: impl Into<String>) -> &mut TrustList {
        self.keys.insert(key, label.into());
        self
    }

    /// Stops trusting `key`; whether it was trusted.
    pub fn revoke(&mut self, key: &PublicKey) -> bool {
        self.keys.remove(key).is_some()
    }

    /// When `true`, unsigned receipts count nowhere, not even on the machine that minted them.
    pub fn require_signatures(&mut self, yes: bool) -> &mut TrustList {
        self.require_signatures = yes;
        self
    }

    /// Whether unsigned receipts are refused everywhere.
    pub fn requires_signatures(&self) -> bool {
        self.require_signatures
    }

    /// The label of `key` if it is trusted.
    pub fn label(&self, key: &PublicKey) -> Option<&str> {
        self.keys.get(key).map(String::as_str)
    }

    /// The trusted keys with their labels.
    pub fn keys(&self) -> impl Iterator<Item = (&PublicKey, &str)> {
        self.keys.iter().map(|(k, l)| (k, l.as_str()))
    }

    /// Parses the trust-list text (see the module doc); a bad line is `Malformed` naming it.
    pub fn parse(text: &str) -> Result<TrustList, KeyError> {
        let mut list = TrustList::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, label) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let key = PublicKey::parse(key).map_err(|e| match e {
                KeyError::Malformed { reason, .. } => KeyError::Malformed { file: None, line: i + 1, reason },
                other => other,
            })?;
            list.trust(key, label.trim());
        }
        Ok(list)
    }

    /// The trust-list text: one `ed25519:<hex> label` line per key, sorted by key.
    pub fn to_text(&self) -> String {
        let mut out = String::from("# op-runtime trust list: receipts signed by these keys count on this machine\n");
        for (k, label) in &self.keys {
            let label: String = label.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            out.push_str(&format!("{k} {}\n", label.trim()).replace(" \n", "\n"));
        }
        out
    }

    /// Reads a trust list file (a symlink or a non-regular file is refused).
    pub fn load(path: &Path) -> Result<TrustList, KeyError> {
        let bytes = files::read_regular(path, MAX_FILE_BYTES).map_err(|e| KeyError::Io {
            file: path.to_path_buf(),
            action: "read",
            reason: e.to_string(),
        })?;
        let text = String::from_utf8(bytes).map_err(|_| KeyError::Malformed {
            file: Some(path.to_path_buf()),
            line: 0,
            reason: "a trust list is UTF-8 text".into(),
        })?;
        TrustList::parse(&text).map_err(|e| match e {
            KeyError::Malformed { line, reason, .. } => KeyError::Malformed { file: Some(path.to_path_buf()), line, reason },
            other => other,
        })
    }

    /// Writes the list to `path` atomically (mode 0644).
    pub fn save(&self, path: &Path) -> Result<(), KeyError> {
        files::write_atomic(path, self.to_text().as_bytes(), Replace::Yes, 0o644).map_err(|e| KeyError::Io {
            file: path.to_path_buf(),
            action: "write",
            reason: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new().prefix("op-trust-").tempdir().unwrap()
    }

    #[test]
    fn keys_are_created_exclusively_private_and_load_back() {
        let t = scratch();
        let path = t.path().join("keys").join("receipts.key");
        let key = SigningKey::create(&path).unwrap();
        assert_eq!(SigningKey::load(&path).unwrap().public_key(), key.public_key());
        assert!(matches!(SigningKey::create(&path), Err(KeyError::Io { action: "create", .. })), "never overwrites a key");
        assert!(!format!("{key:?}").contains(&op_contract::identity::hex(key.inner.as_bytes())), "Debug must not show the secret");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(matches!(SigningKey::load(&path), Err(KeyError::Permissions { mode: 0o644, .. })));
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            let link = t.path().join("link.key");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            assert!(matches!(SigningKey::load(&link), Err(KeyError::Io { .. })), "a symlinked key is refused");
        }
        assert_ne!(SigningKey::generate().unwrap().public_key(), key.public_key());
    }

    #[test]
    fn damaged_key_files_are_malformed_never_a_panic() {
        let key = SigningKey::from_secret_bytes(&[7; 32]);
        let text = key.to_text();
        assert_eq!(SigningKey::parse(&text).unwrap().public_key(), key.public_key());
        let other = SigningKey::from_secret_bytes(&[8; 32]);
        let swapped = text.replace(&key.public_key().to_string(), &other.public_key().to_string());
        assert!(matches!(SigningKey::parse(&swapped), Err(KeyError::Malformed { line: 3, .. })));
        for bad in ["", "nonsense", SIGNING_KEY_HEADER, "op-runtime receipt signing key v1\nsecret zz\n", "\u{ff}\u{0}é"] {
            assert!(matches!(SigningKey::parse(bad), Err(KeyError::Malformed { .. })), "{bad:?}");
        }
        // Every truncation and every byte replaced by a non-ASCII character.
        for n in 0..text.len() {
            let _ = SigningKey::parse(&text[..n]);
            let mut s = text.clone();
            s.replace_range(n..n + 1, "é");
            assert!(SigningKey::parse(&s).is_err() || s.trim() == text.trim(), "{s:?}");
        }
    }

    #[test]
    fn trust_lists_round_trip_and_name_bad_lines() {
        let a = SigningKey::from_secret_bytes(&[1; 32]).public_key();
        let b = SigningKey::from_secret_bytes(&[2; 32]).public_key();
        let mut list = TrustList::new();
        list.trust(a, "ci gpu runner").trust(b, "");
        let text = list.to_text();
        assert_eq!(TrustList::parse(&text).unwrap(), list);
        assert_eq!(list.label(&a), Some("ci gpu runner"));
        let t = scratch();
        let path = t.path().join("trusted-keys");
        list.save(&path).unwrap();
        assert_eq!(TrustList::load(&path).unwrap(), list);
        assert!(list.clone().revoke(&a));
        let bad = format!("# comment\n{a} ok\ned25519:{} short\n", "ab".repeat(10));
        assert!(matches!(TrustList::parse(&bad), Err(KeyError::Malformed { line: 3, .. })));
        assert!(matches!(TrustList::parse("ed25519:é"), Err(KeyError::Malformed { line: 1, .. })));
        assert!(matches!(TrustList::parse("rsa:00"), Err(KeyError::Malformed { line: 1, .. })));
        std::fs::write(&path, b"\xff\xfe").unwrap();
        assert!(matches!(TrustList::load(&path), Err(KeyError::Malformed { line: 0, .. })));
        assert_eq!(PublicKey::parse(&a.to_string()).unwrap(), a);
        assert!(PublicKey::parse(&format!("ed25519:{}", "é".repeat(32))).is_err());
    }
}
