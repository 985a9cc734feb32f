//! Webhooks signed as the Standard Webhooks specification describes (issue 29): the
//! headers `webhook-id` (the delivery id), `webhook-timestamp` (unix seconds) and
//! `webhook-signature` (`v1,` and the base64 of HMAC-SHA256 over `id.timestamp.body`,
//! keyed by the secret: `whsec_` and the base64 of its bytes).
//!
//! The secret is the root's `webhook.key` (mode 0600, beside `audit.key`, created with 32
//! random bytes the first time a daemon with webhooks starts; an operator may write their
//! own `whsec_…` there instead). It is read from that file only: never an argument, an
//! environment variable, a log line or an event. A receiver is given the file's content.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};

/// The secret's file in the root.
pub const KEY_FILE: &str = "webhook.key";

/// The secret's prefix.
const PREFIX: &str = "whsec_";

/// A signing secret's key bytes. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// Parse `whsec_` + base64.
    pub fn parse(s: &str) -> Option<Secret> {
        let b = STANDARD.decode(s.trim().strip_prefix(PREFIX)?).ok()?;
        (!b.is_empty()).then_some(Secret(b))
    }

    /// The secret as a receiver is given it (`whsec_` + base64).
    pub fn to_text(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.0))
    }

    /// Read `dir/webhook.key`, creating it (0600, 32 random bytes) when it is missing.
    pub fn load_or_create(dir: &Path) -> Result<Secret> {
        let path = dir.join(KEY_FILE);
        match fs::read_to_string(&path) {
            Ok(text) => Secret::parse(&text).ok_or_else(|| {
                Error::Usage(format!(
                    "{} is not a webhook secret: it must hold whsec_ and base64",
                    crate::text::path_for_log(&path)
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut b = vec![0u8; 32];
                getrandom::getrandom(&mut b).map_err(|e| {
                    Error::Invalid(format!("no randomness for the webhook secret: {e}"))
                })?;
                let secret = Secret(b);
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(|e| Error::io(&path, e))?;
                f.write_all(format!("{}\n", secret.to_text()).as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| Error::io(&path, e))?;
                tracing::info!(file = KEY_FILE, "created the webhook signing secret");
                Ok(secret)
            }
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// The `webhook-signature` header of `body` sent as delivery `id` at `timestamp`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_round_trips_and_signs_id_timestamp_body() {
        let s = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(s.to_text(), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let a = s.sign("msg_1", 1_674_087_231, b"{}");
        assert!(a.starts_with("v1,"), "{a}");
        assert_eq!(a, s.sign("msg_1", 1_674_087_231, b"{}"));
        assert_ne!(a, s.sign("msg_2", 1_674_087_231, b"{}"));
        assert_ne!(a, s.sign("msg_1", 1_674_087_232, b"{}"));
        assert_ne!(a, s.sign("msg_1", 1_674_087_231, b"{ }"));
        assert!(Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_none());
        assert!(Secret::parse("whsec_!!").is_none());
        assert_eq!(format!("{s:?}"), "Secret(..)");
    }

    #[test]
    fn the_key_file_is_created_once_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = Secret::load_or_create(dir.path()).unwrap();
        let b = Secret::load_or_create(dir.path()).unwrap();
        assert_eq!(a.to_text(), b.to_text());
        let mode = fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
