//! Key and secret files: one rule for every file holding a key or a secret that the root
//! holds (`audit.key`, `receipt.key`, `mail.key`, `push-vapid.key`, `webhook.key`, `mcp-state.key`,
//! `slack.token`, `slack-signing-secret`) or the command line or config names
//! (`--slack-token-file`, `--slack-signing-secret-file`, `--smtp-password-file`).
//!
//! Why one rule: a key another local user can read is a key they hold. Anyone holding
//! `mail.key` signs links that answer any request as `mail:ANYONE`; `receipt.key` signs
//! receipts that verify under the host's public key; `webhook.key` forges notifications.
//! dshq creates each of them 0600, but an operator may write their own (the README invites
//! it for `webhook.key`) with the umask's 0644. So, as ssh treats its private keys, such a
//! file is used only when it is owned by this user (or root) and neither group nor others
//! may read or write it; anything else is refused with `UNSAFE_ROOT` (exit 12), naming the
//! file and the fix (`chmod 600`), before its content is used. The daemon checks the
//! root's at its start ([`check`]), so a daemon with an unsafe key does not start
//! silently; every reader reads through [`read`], so no other path takes a key.
//!
//! A file that holds a secret among other things (a config file with a password in a URL)
//! is judged by the same rule ([`judge`]) once it is known to hold one.
//!
//! The mode and owner are those of the opened file (`fstat` on the descriptor the content
//! is then read from): a file swapped between the check and the read is not read.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::protocol::Code;

/// The refusal of `path`, holding `what`, for `why`.
fn unsafe_file(path: &Path, what: &str, why: std::fmt::Arguments<'_>) -> Error {
    let shown = crate::text::path_for_log(path);
    Error::question(
        Code::UnsafeRoot,
        format!("refusing {shown}: it holds the {what} and {why}"),
    )
}

/// Read the key or secret file `path` (`what` names its content in messages, e.g. "mail
/// link key"): `Ok(None)` when there is no such file; refused (`UNSAFE_ROOT`) when it is
/// not this user's (or root's) or group or others may read or write it.
pub fn read(path: &Path, what: &str) -> Result<Option<String>> {
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking, so a FIFO planted in a key's place is refused, not waited on.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let mut f = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let m = f.metadata().map_err(|e| Error::io(path, e))?;
    judge(path, what, &m)?;
    let mut text = String::new();
    f.read_to_string(&mut text)
        .map_err(|e| Error::io(path, e))?;
    Ok(Some(text))
}

/// The rule itself, on the metadata `m` of the opened file `path` holding `what`: a
/// regular file, this user's (or root's), that group and others may neither read nor
/// write.
pub fn judge(path: &Path, what: &str, m: &std::fs::Metadata) -> Result<()> {
    judge_readers(path, what, m)?;
    let euid = rustix::process::geteuid().as_raw();
    if m.uid() != euid && m.uid() != 0 {
        return Err(unsafe_file(
            path,
            what,
            format_args!(
                "is owned by uid {}, not by this user ({euid}): chown it, or write your own",
                m.uid()
            ),
        ));
    }
    Ok(())
}

/// The half of the rule that keeps a secret secret, for a file that holds one among other
/// things (a config file with a password in a URL: [`crate::config::load`]): a regular file
/// that group and others may neither read nor write. Whose it is does not matter there:
/// it is a setting, not a key dshq's records rest on (a service's config, owned by its
/// user, checked by root).
pub fn judge_readers(path: &Path, what: &str, m: &std::fs::Metadata) -> Result<()> {
    if !m.is_file() {
        return Err(unsafe_file(
            path,
            what,
            format_args!("is not a regular file"),
        ));
    }
    let mode = m.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(unsafe_file(
            path,
            what,
            format_args!(
                "group or others may read or write it (mode {mode:04o}): make it readable by its owner only with `chmod 600 {}`",
                crate::text::path_for_log(path)
            ),
        ));
    }
    Ok(())
}

/// Check the key or secret file `path` without using it: [`read`]'s refusal, or nothing
/// (absent or safe).
pub fn check(path: &Path, what: &str) -> Result<()> {
    read(path, what).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_an_owner_only_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        assert_eq!(read(&p, "key").unwrap(), None, "absent is no key");
        std::fs::write(&p, "secret\n").unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620, 0o602, 0o666] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read(&p, "mail link key").unwrap_err();
            assert_eq!(e.code(), Code::UnsafeRoot, "{mode:o}");
            let m = e.to_string();
            assert!(
                m.contains("mail link key") && m.contains("chmod 600"),
                "{m}"
            );
            assert!(!m.contains("secret"), "the content is never shown: {m}");
        }
        for mode in [0o600, 0o400] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(read(&p, "key").unwrap().as_deref(), Some("secret\n"));
        }
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(read(&d, "key").unwrap_err().code(), Code::UnsafeRoot);
    }
}
