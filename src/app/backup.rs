//! `dshq store backup DIR`: a consistent copy of a live SQLite store, as a root of its own.
//!
//! DIR gets `dshq.db` (a `VACUUM INTO` snapshot, taken while the daemon runs), the root's
//! `audit.key` (without it the copy's chain cannot be verified), `receipt.key` (when the
//! root has one), and an `audit.head`
//! written from the copy's own newest event, not copied from the live root (whose head
//! has moved on since the snapshot). So `dshq --root DIR audit verify` checks the copy
//! against the head it had, and restoring is pointing a root at DIR (or copying its
//! three files into an empty root).
//!
//! DIR is judged as the root it becomes before anything is written to it: owned by this
//! user (or root), not writable by group or others, or `UNSAFE_ROOT` (a directory someone
//! else controls could plant `audit.key` as a link to a file of ours, or as a file of
//! theirs, the moment `dshq.db` appears). A missing DIR is created owner-only. The keys
//! are then written with exclusive, no-follow creation (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode
//! 0600): anything in a key's place (a link, a file), however it got there, fails the
//! backup, and is neither followed, overwritten nor given the key.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
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

/// Create the key file `path` holding `bytes`: exclusively (`O_EXCL`), never through a
/// link (`O_NOFOLLOW`), owner-only, written whole and fsynced. Something already in its
/// place fails it, untouched.
fn write_key(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                crate::error::Error::question(
                    crate::protocol::Code::UnsafeRoot,
                    format!(
                        "{} appeared while the backup was written (a link or a file in the \
                         key's place): something else writes in the backup directory; the \
                         key was not written and the backup was removed: back up into a \
                         directory only you can write to",
                        crate::text::path_for_log(path)
                    ),
                )
            } else {
                Error::io(path, e)
            }
        })?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io(path, e))
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
    let copy = Root::new(dest);
    // The directory is judged (as the root it becomes) before anything is written to it.
    copy.check_trusted()?;
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
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dest)
                .map_err(|e| Error::io(dest, e))?;
        }
        Err(e) => return Err(Error::io(dest, e)),
    }
    crate::store::sqlite::vacuum_into(&root.db(), &copy.db())?;
    let mut written = vec![copy.db()];
    // The audit key, and the receipt key (a restored root signs receipts that verify
    // with the public key auditors already hold), read by the keys' own rule.
    for (name, what) in [
        (crate::store::chain::KEY_FILE, crate::store::chain::KEY_WHAT),
        (crate::receipt::key::KEY_FILE, crate::receipt::key::KEY_WHAT),
    ] {
        let keyed = crate::disk::secret::read(&root.dir().join(name), what).and_then(|k| {
            k.map(|text| write_key(&dest.join(name), text.as_bytes()))
                .transpose()
        });
        match keyed {
            Ok(Some(())) => written.push(dest.join(name)),
            Ok(None) => {}
            Err(e) => {
                // No half backup is left to be taken for a whole one (unlink never
                // follows a link).
                for p in &written {
                    let _ = std::fs::remove_file(p);
                }
                return Err(e);
            }
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
