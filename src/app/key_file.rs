//! The root's key files made by dshq itself (`mail.key`, `push-vapid.key`): a key of `N`
//! bytes written as hex, read through the one rule for key files
//! ([`crate::disk::secret`]) and created mode 0600 at its first use. Written once, for
//! every such key.

use std::path::Path;

use crate::error::{Error, Result};

/// The key of `N` bytes, written as hex, in the root's file `file` (`what` names it in
/// messages): `Ok(None)` when there is none; refused when it holds anything else.
pub fn hex_key<const N: usize>(dir: &Path, file: &str, what: &str) -> Result<Option<[u8; N]>> {
    let path = dir.join(file);
    match crate::disk::secret::read(&path, what)? {
        Some(text) => crate::receipt::key::unhex::<N>(text.trim())
            .map(Some)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{} is not a {what}: it must hold {} lowercase hex digits",
                    crate::text::path_for_log(&path),
                    2 * N
                ))
            }),
        None => Ok(None),
    }
}

/// The key in the root's file `file` ([`hex_key`]), created (mode 0600, the bytes `make`
/// gives) when there is none. Two processes that race both end with the one file that won.
pub fn hex_key_or_create<const N: usize>(
    dir: &Path,
    file: &str,
    what: &str,
    make: impl FnOnce() -> Result<[u8; N]>,
) -> Result<[u8; N]> {
    if let Some(k) = hex_key(dir, file, what)? {
        return Ok(k);
    }
    let text = format!("{}\n", crate::receipt::key::hex(&make()?));
    if crate::disk::atomic::write_new(dir, file, text.as_bytes())? {
        tracing::info!(file, "created the {what}");
    }
    hex_key(dir, file, what)?
        .ok_or_else(|| Error::Invalid(format!("{file} vanished after it was created")))
}
