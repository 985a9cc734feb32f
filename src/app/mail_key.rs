//! The root's mail-link key: `mail.key` (mode 0600, beside `audit.key`), 32 random bytes
//! as hex, created once by the first daemon that sends mail ([`load_or_create`]) and read
//! by the page that checks the links ([`load`]). It signs the links of
//! [`crate::core::mail_link`]; replacing it refuses every link sent before (LINK_INVALID),
//! which is how an operator revokes them all.
//!
//! Read from that file only: never an argument, an environment variable, a log line or
//! an event.

use std::path::Path;

use crate::core::mail_link::LinkKey;
use crate::error::{Error, Result};

/// The key's file in the root.
pub const KEY_FILE: &str = "mail.key";

/// What [`KEY_FILE`] holds, in messages.
pub const KEY_WHAT: &str = "mail link key";

/// The root's key, if it has one.
pub fn load(dir: &Path) -> Result<Option<LinkKey>> {
    Ok(super::key_file::hex_key::<32>(dir, KEY_FILE, KEY_WHAT)?.map(LinkKey::new))
}

/// The root's key, created (0600, 32 random bytes) when it has none.
pub fn load_or_create(dir: &Path) -> Result<LinkKey> {
    super::key_file::hex_key_or_create(dir, KEY_FILE, KEY_WHAT, || {
        let mut b = [0u8; 32];
        getrandom::getrandom(&mut b)
            .map_err(|e| Error::Invalid(format!("no randomness for the mail link key: {e}")))?;
        Ok(b)
    })
    .map(LinkKey::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_created_once_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_none());
        let a = load_or_create(dir.path()).unwrap();
        let b = load_or_create(dir.path()).unwrap();
        assert_eq!(a.bytes(), b.bytes());
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(dir.path().join(KEY_FILE), "nope").unwrap();
        assert!(load(dir.path()).is_err());
    }
}
