//! The root's VAPID key (RFC 8292): `push-vapid.key` (mode 0600), the P-256 private key
//! the daemon signs its push requests with, as 64 hex digits, created by the first daemon
//! that sends Web Push. Browsers subscribe with its public key (the page reads it from
//! `GET /push/key`) and their push services accept only requests it signed, so replacing
//! it ends every subscription: each device must subscribe again.
//!
//! Read from that file only: never an argument, an environment variable, a log line or
//! an event.

use std::path::Path;

use web_push_native::jwt_simple::algorithms::{ECDSAP256PublicKeyLike, ES256KeyPair};

use crate::error::{Error, Result};

/// The key's file in the root.
pub const KEY_FILE: &str = "push-vapid.key";

/// What [`KEY_FILE`] holds, in messages.
pub const KEY_WHAT: &str = "Web Push VAPID key";

/// The root's VAPID key pair, created when it has none.
pub fn load_or_create(dir: &Path) -> Result<ES256KeyPair> {
    let bytes = super::key_file::hex_key_or_create::<32>(dir, KEY_FILE, KEY_WHAT, || {
        ES256KeyPair::generate()
            .to_bytes()
            .try_into()
            .map_err(|_| Error::Invalid("a P-256 private key is 32 bytes".into()))
    })?;
    ES256KeyPair::from_bytes(&bytes).map_err(|_| {
        Error::Usage(format!(
            "{KEY_FILE} does not hold a P-256 private key: remove it to make a new one (every device subscribes again)"
        ))
    })
}

/// The public key browsers subscribe with (`applicationServerKey`): the uncompressed
/// point, base64url without padding.
pub fn public(key: &ES256KeyPair) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(key.public_key().public_key().to_bytes_uncompressed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vapid_key_is_made_once_mode_0600_and_its_public_key_is_a_p256_point() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = public(&load_or_create(dir.path()).unwrap());
        assert_eq!(a, public(&load_or_create(dir.path()).unwrap()));
        assert_eq!(a.len(), 87, "65 bytes in base64url: {a}");
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(dir.path().join(KEY_FILE), "nope").unwrap();
        assert!(load_or_create(dir.path()).is_err());
    }
}
