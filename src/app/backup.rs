//! `dshq store backup DIR`: a consistent copy of a live SQLite store, as a root of its own.
//!
//! DIR gets `dshq.db` (a `VACUUM INTO` snapshot, taken while the daemon runs), the root's
//! `audit.key` (without it the copy's chain cannot be verified), `receipt.key` (when the
//! root has one), and an `audit.head`
//! written from the copy's own newest event, not copied from the live root (whose head
//! has moved on since the snapshot). So `dshq --root DIR audit verify` checks the copy
//! against the head it had, and restoring is pointing a root at DIR (or copying its
//! three files into an empty root).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::root::{Backend, Root};
use crate::store::{write_anchor, Anchor, ANCHOR_FILE};

/// What a backup wrote.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Backup {
    /// The backup directory.
    pub dir: PathBuf,
    /// Events in the copy (verified).
    pub events: i64,
    /// Requests checked against their events.
    pub requests: i64,
    /// The copy's newest event.
    pub head_seq: Option<i64>,
    /// Its hash.
    pub head_hash: Option<String>,
}

/// Back up `root`'s SQLite store into the new (or empty) directory `dest`, and verify the
/// copy there.
pub fn backup(root: &Root, dest: &Path) -> Result<Backup> {
    if root.backend() != &Backend::Sqlite {
        return Err(Error::Usage(
            "store backup copies a SQLite store; back up a PostgreSQL store with pg_dump \
             (see the README, \"Backup and restore\")"
                .into(),
        ));
    }
    if !root.db().exists() {
        return Err(Error::Usage(format!(
            "no store to back up at {}",
            crate::text::path_for_log(&root.db())
        )));
    }
    match std::fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Error::Usage(format!(
                    "{} is not empty: give a new directory for the backup",
                    crate::text::path_for_log(dest)
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest).map_err(|e| Error::io(dest, e))?;
        }
        Err(e) => return Err(Error::io(dest, e)),
    }
    let copy = Root::new(dest);
    crate::store::sqlite::vacuum_into(&root.db(), &copy.db())?;
    // The audit key, and the receipt key (a restored root signs receipts that verify
    // with the public key auditors already hold); copied with their 0600 mode.
    for name in [crate::store::chain::KEY_FILE, crate::receipt::key::KEY_FILE] {
        let key = root.dir().join(name);
        if key.exists() {
            let to = dest.join(name);
            std::fs::copy(&key, &to).map_err(|e| Error::io(&to, e))?;
        }
    }
    // The copy's own head, checked by a full verification of the copy.
    let mut store = copy.open_store_read()?;
    let v = store.verify(&[])?;
    if let Some(why) = v.broken {
        return Err(Error::question(
            crate::protocol::Code::AuditBroken,
            format!("the backup does not verify: {why}"),
        ));
    }
    if let Some((seq, hash)) = &v.head {
        write_anchor(
            &dest.join(ANCHOR_FILE),
            &Anchor {
                seq: *seq,
                hash: hash.clone(),
            },
        )?;
    }
    Ok(Backup {
        dir: dest.to_path_buf(),
        events: v.events,
        requests: v.requests,
        head_seq: v.head.as_ref().map(|h| h.0),
        head_hash: v.head.map(|h| h.1),
    })
}
