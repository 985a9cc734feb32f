//! The host's receipt signing key: `receipt.key` in the root, beside `audit.key` and kept
//! like it (created once, from the OS's random source, mode 0600, under a temporary name
//! and then linked into place without replacing, so two processes that race to create it
//! end up with the one file; never in the database, an event, a log or an argument).
//!
//! The file holds the Ed25519 seed; the public key is derived from it and printed by
//! `dshq receipt key` as `ed25519:HEX` ([`PublicKey`]), the form `receipt verify --key`
//! takes and a receipt's `signer` member carries.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::error::{Error, Result};

/// The key file, in the root beside `audit.key`.
pub const KEY_FILE: &str = "receipt.key";

/// What [`KEY_FILE`] holds, in messages.
pub const KEY_WHAT: &str = "receipt signing key";

const MAGIC: &str = "dshq receipt key v1";

/// The prefix of a public key's text form.
pub const PUBLIC_PREFIX: &str = "ed25519:";

/// A host's signing key (the secret never leaves this type: no `Debug` of it).
pub struct ReceiptKey {
    signing: SigningKey,
}

impl fmt::Debug for ReceiptKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReceiptKey")
            .field("public", &self.public().to_string())
            .finish_non_exhaustive()
    }
}

impl ReceiptKey {
    /// A key from its 32-byte seed (tests and tools).
    pub fn from_seed(seed: [u8; 32]) -> ReceiptKey {
        ReceiptKey {
            signing: SigningKey::from_bytes(&seed),
        }
    }

    /// Its public half.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.signing.verifying_key())
    }

    /// The Ed25519 signature of `message` (deterministic: the same bytes each time).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.signing.sign(message).to_bytes()
    }

    fn to_file(&self) -> String {
        format!("{MAGIC}\nseed {}\n", hex(&self.signing.to_bytes()))
    }

    fn parse(text: &str) -> Option<ReceiptKey> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let seed = unhex::<32>(lines.next()?.strip_prefix("seed ")?)?;
        if lines.next().is_some() {
            return None;
        }
        Some(ReceiptKey::from_seed(seed))
    }
}

/// An Ed25519 public key, written `ed25519:` and 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(pub VerifyingKey);

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PUBLIC_PREFIX}{}", hex(self.0.as_bytes()))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl PublicKey {
    /// Parse `ed25519:HEX` exactly as written (lowercase hex: a receipt's `signer` has one
    /// spelling only, so no changed byte of it can name the same key).
    pub fn parse(s: &str) -> Option<PublicKey> {
        let bytes = unhex::<32>(s.strip_prefix(PUBLIC_PREFIX)?)?;
        VerifyingKey::from_bytes(&bytes).ok().map(PublicKey)
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    crate::protocol::digest::hex(bytes)
}

/// Exactly `2 * N` lowercase hex digits, or `None`.
pub fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// Keys already read by this process, per root.
static KEYS: Mutex<Vec<(PathBuf, Arc<ReceiptKey>)>> = Mutex::new(Vec::new());

/// Read the key file of root `dir`, if there is one.
pub fn load(dir: &Path) -> Result<Option<ReceiptKey>> {
    let path = dir.join(KEY_FILE);
    match crate::disk::secret::read(&path, KEY_WHAT)? {
        Some(text) => ReceiptKey::parse(&text).map(Some).ok_or_else(|| {
            Error::io(
                &path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not a dshq receipt key file (restore it from a backup; receipts signed \
                     with it verify only with its public key)",
                ),
            )
        }),
        None => Ok(None),
    }
}

/// The root's key, created when the root has none (read once per process and root).
pub fn load_or_create(dir: &Path) -> Result<Arc<ReceiptKey>> {
    let mut cache = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = cache.iter().find(|(d, _)| d == dir) {
        return Ok(k.clone());
    }
    let key = match load(dir)? {
        Some(k) => k,
        None => {
            let mut seed = [0u8; 32];
            getrandom::getrandom(&mut seed)
                .map_err(|e| Error::io(dir.join(KEY_FILE), std::io::Error::other(e.to_string())))?;
            create_file(dir, &ReceiptKey::from_seed(seed))?;
            // Another process may have won the race: the file is the authority.
            let key = load(dir)?.ok_or_else(|| {
                Error::io(
                    dir.join(KEY_FILE),
                    std::io::Error::other("the receipt key vanished after it was created"),
                )
            })?;
            tracing::info!(
                public = %key.public(),
                "created the receipt signing key (print it with `dshq receipt key`)"
            );
            key
        }
    };
    let key = Arc::new(key);
    cache.push((dir.to_path_buf(), key.clone()));
    Ok(key)
}

/// Create `dir/receipt.key` (0600, written whole and fsynced, linked into place so an
/// existing key is never replaced: a racing creator's file wins).
fn create_file(dir: &Path, key: &ReceiptKey) -> Result<()> {
    crate::disk::atomic::write_new(dir, KEY_FILE, key.to_file().as_bytes()).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_round_trips_and_refuses_anything_else() {
        let k = ReceiptKey::from_seed([7; 32]);
        let text = k.to_file();
        assert!(text.starts_with("dshq receipt key v1\nseed 0707"));
        let back = ReceiptKey::parse(&text).unwrap();
        assert_eq!(back.public(), k.public());
        assert!(ReceiptKey::parse(&text.to_uppercase()).is_none());
        assert!(ReceiptKey::parse(&format!("{text}extra\n")).is_none());
        assert!(ReceiptKey::parse("dshq receipt key v1\nseed 00\n").is_none());
    }

    #[test]
    fn a_public_key_has_one_spelling() {
        let p = ReceiptKey::from_seed([9; 32]).public();
        let s = p.to_string();
        assert_eq!(PublicKey::parse(&s), Some(p));
        assert_eq!(PublicKey::parse(&s.to_uppercase()), None);
        assert_eq!(PublicKey::parse(&s.replace("ed25519:", "")), None);
        assert_eq!(PublicKey::parse(&format!("{s}0")), None);
    }

    #[test]
    fn the_file_is_created_once_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = load(dir.path()).unwrap().unwrap();
        assert_eq!(again.public(), a.public());
    }
}
