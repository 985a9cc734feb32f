//! The audit's head anchor: the newest event's seq and hash, kept in a file outside the
//! store (`audit.head` in the root, or anywhere an operator copies it), so a truncated or
//! re-hashed log is found (`dshq audit verify --anchor FILE`). Backend-neutral: every
//! backend writes it after its commits and checks the log against it (the verdict,
//! [`anchor_break`], is one for both: each backend only reads the hash and the last seq).

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::types::ChainBreak;

/// The head anchor, in the root beside the store.
pub const ANCHOR_FILE: &str = "audit.head";

/// A head of the log kept outside the database: the newest event's seq and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// The newest event's seq.
    pub seq: i64,
    /// Its hash.
    pub hash: String,
}

/// Write `anchor` to `path` atomically.
pub fn write_anchor(path: &Path, anchor: &Anchor) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Error::io(&tmp, e))?;
    let mut text = serde_json::to_string(anchor).expect("an anchor serializes");
    text.push('\n');
    // Not fsynced: this runs after every commit, and an fsync here doubled the latency of
    // each write. After a power loss the file may hold an older head (still contained in
    // the log) or, on some file systems, be empty: `audit verify` then reports it as
    // unreadable rather than as a broken log, and the next write rewrites it.
    f.write_all(text.as_bytes())
        .map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Read an anchor file.
pub fn read_anchor(path: &Path) -> Result<Anchor> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| {
        Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not an audit head ({e})"),
            ),
        )
    })
}

/// Whether a log still contains `anchor`, from what a backend read of it: the hash of
/// the event at the anchor's seq (`found`, none when there is no such event) and the
/// log's last seq. `None` when it does, else what is wrong.
pub fn anchor_break(anchor: &Anchor, found: Option<&str>, last: i64) -> Option<ChainBreak> {
    match found {
        None => Some(ChainBreak {
            seq: anchor.seq,
            problem: format!(
                "the anchor names event {} but the log ends at {last}: its newest events were removed",
                anchor.seq
            ),
        }),
        Some(h) if h != anchor.hash => Some(ChainBreak {
            seq: anchor.seq,
            problem: format!(
                "event {}'s hash is not the anchor's: the log was rewritten from there",
                anchor.seq
            ),
        }),
        Some(_) => None,
    }
}
