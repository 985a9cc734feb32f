//! Moving up: copy a whole store into an empty one (SQLite → PostgreSQL), then verify the
//! copy.
//!
//! The copy is the audit's own export read back: [`Store::export`] (one snapshot of the
//! source) streamed through a bounded channel into [`Store::import`] (one transaction on
//! the target), so memory stays bounded whatever the store's size and a copy that fails
//! half-way leaves the target empty. The records carry every position, time and hash, so
//! the target's `audit verify` checks the same chain the source had.

use std::sync::mpsc;

use crate::error::{Error, Result};
use crate::store::{Anchor, Record, Store, Verified};

/// How many records may wait between the export and the import.
const IN_FLIGHT: usize = 1024;

/// What [`copy`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Copied {
    /// Records copied.
    pub records: u64,
    /// The target's verification (it passed).
    pub verified: Verified,
}

/// Copy `from` into `to` (which must be empty), then verify `to` against `anchors` (the
/// source root's head anchor): `AUDIT_BROKEN` when the copy does not verify.
pub fn copy(
    from: &mut Store,
    to: &mut Store,
    anchors: &[(std::path::PathBuf, Anchor)],
) -> Result<Copied> {
    let (tx, rx) = mpsc::sync_channel::<Result<Record>>(IN_FLIGHT);
    let records = std::thread::scope(|s| {
        let exporter = s.spawn(move || {
            let tx2 = tx.clone();
            let r = from.export(&mut |kind, fields| {
                tx2.send(Ok((kind.to_string(), fields)))
                    .map_err(|_| Error::Invalid("the copy stopped".into()))
            });
            if let Err(e) = &r {
                // The import sees the failure as its last record and rolls back.
                let _ = tx.send(Err(Error::Invalid(format!(
                    "reading the source failed: {e}"
                ))));
            }
            r
        });
        let imported = to.import(&mut rx.into_iter());
        let exported = exporter
            .join()
            .map_err(|_| Error::Invalid("the export thread panicked".into()))?;
        match (imported, exported) {
            (Ok(n), Ok(())) => Ok(n),
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(e),
        }
    })?;
    let verified = super::audit::verify(to, anchors)?;
    Ok(Copied { records, verified })
}
