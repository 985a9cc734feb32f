//! A dropped file that cannot be judged yet: still being written, or not readable yet.
//!
//! The protocol asks writers to write in `tmp/` and rename into `new/`, so the daemon only
//! ever sees whole files. The common mistake is a `cp` (or a shell redirection) straight
//! into `new/`: the daemon can read the file while it is empty or half written. Judging it
//! then rejects a request that would have been fine a millisecond later. So a file that
//! reads as *unfinished* (empty, or JSON that ends before its value does) or that the
//! daemon may not read (`EACCES`: a writer that `chmod`s after writing, or a file made for
//! another user) is left alone while it is *settling*: while its last change (data or inode:
//! a write, the rename into the directory, a `chmod`) is younger than [`GRACE`]. The
//! periodic rescan looks at it again; once it has stood still for the grace it is judged
//! like any other bad input, and its reason says what to fix ([`unfinished_hint`],
//! [`unreadable_hint`]).
//!
//! Why the file's own times and not a memory of when the daemon first saw it: they survive
//! a restart, they need no state shared between the reading thread and the loop, and every
//! write moves them, so "stable for the grace" is exactly "no change for the grace". The
//! kernel stamps them from the wall clock, so they are compared with the wall clock (never
//! the tests' shifted clock); a time ahead of the clock by more than the grace (a file
//! copied from a machine whose clock runs ahead) does not hold the file back.
//!
//! A complete JSON document is judged at once, whatever its age: a request that is valid
//! is accepted without waiting, and a finished file with a wrong field is rejected without
//! waiting.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long an unfinished or unreadable file must stand still before it is judged.
pub const GRACE: Duration = Duration::from_secs(2);

/// Whether `bytes` look like a JSON document cut short: nothing but white space, or JSON
/// whose parser ran out of input before the value ended.
pub fn unfinished(bytes: &[u8]) -> bool {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return true;
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Ok(_) => false,
        Err(e) => e.is_eof(),
    }
}

/// Whether the file at `path` changed within the [`GRACE`] (its data or its inode), so it
/// may still be being written: judge it later. `false` when it is gone or cannot be
/// examined (the next pass finds out why).
pub fn settling(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let ns = |secs: i64, nsec: i64| secs as i128 * 1_000_000_000 + nsec as i128;
    let changed = ns(meta.mtime(), meta.mtime_nsec()).max(ns(meta.ctime(), meta.ctime_nsec()));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as i128;
    (now - changed).abs() < GRACE.as_nanos() as i128
}

/// What the reason of an unfinished file adds: what it looked like and how to write one so
/// that it is never read half written. `dir` is the directory pair's name (`inbox`,
/// `answers`).
pub fn unfinished_hint(bytes: &[u8], dir: &str) -> String {
    let what = if bytes.iter().all(u8::is_ascii_whitespace) {
        "the file is empty"
    } else {
        "the file ends before its JSON does"
    };
    format!(
        "{what} (unchanged for {}s: was it still being written?); write the file in {dir}/tmp/ \
         and rename it into {dir}/new/ once it is complete, so it is never read half written",
        GRACE.as_secs()
    )
}

/// The reason of a file the daemon may not read: what the error was and what to change.
pub fn unreadable_hint(path: &Path, error: &std::io::Error, dir: &str) -> String {
    let mode = std::fs::symlink_metadata(path)
        .map(|m| format!(" (mode {:04o})", m.mode() & 0o7777))
        .unwrap_or_default();
    format!(
        "the daemon cannot read the file{mode}: {error}; give its user read permission \
         (chmod 0600, owned by the user the daemon runs as), write it in {dir}/tmp/ and rename \
         it into {dir}/new/ again"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_is_empty_or_cut_short_json_only() {
        for cut in [
            "",
            "  \n",
            "{",
            "{\"id\": \"x\", \"questions\": [",
            "{\"id\": \"x",
        ] {
            assert!(unfinished(cut.as_bytes()), "{cut:?}");
        }
        for whole in ["{}", "{\"id\": 1}\n", "{ not json", "[1, 2]]", "null"] {
            assert!(!unfinished(whole.as_bytes()), "{whole:?}");
        }
    }

    #[test]
    fn a_file_just_written_is_settling_and_an_old_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        std::fs::write(&p, "{").unwrap();
        assert!(settling(&p));
        let old = SystemTime::now() - GRACE * 3;
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(old).unwrap();
        // The inode's change time moved with set_modified: still settling.
        assert!(settling(&p));
        assert!(!settling(&dir.path().join("gone.json")));
    }
}
