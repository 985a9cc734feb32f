//! Writing outcome documents to `outbox/ID.json`.
//!
//! A final request is committed with `outbox_pending = 1`; [`flush`] writes each pending
//! outcome atomically, fsyncs the directory once per batch, and only then clears the flag.
//! A crash anywhere in between leaves the flag set, so the outcome is written again after
//! a restart (the same document, so writing it twice is harmless). Both the daemon and the
//! CLI commands that finish a request call it, which is why a CLI answer reaches the outbox
//! at once while the daemon runs.
//!
//! Each outcome carries its signed receipt (the caller's [`Attach`]: the use-cases pass
//! the receipts' own, which signs with the root's key), rebuilt from the store when the
//! file is written, so a rewrite writes the same bytes; an
//! outcome whose receipt cannot be made is written without one (and logged): the asker
//! never loses its outcome to a receipt.
//!
//! An id can be reused after a rejection (rejections do not reserve ids), so the outbox can
//! hold the error outcome of an earlier input under the id of a request that is now open.
//! It is removed right after the accepting commit ([`remove_stale`]); a crash in between
//! would leave it there, so [`repair`] removes every outcome file of an open request when
//! the daemon starts. An open request has no outcome, so any file under its id is stale.
//! The check and the unlink happen inside one write transaction: no answer can commit in
//! between, and an answer's file is written only after its commit, so a fresh outcome is
//! never the one removed.

use crate::disk::atomic::{sync_dir, sync_filesystem, write_atomic, write_temp};
use crate::error::Result;
use crate::root::Root;
use crate::store::Store;

/// How many outcomes one batch writes before committing the flags.
pub const BATCH: usize = 512;

/// Up to this many outcomes in a batch, each file is fsynced on its own; above it, one
/// `syncfs` covers them all.
pub const FSYNC_EACH_UP_TO: usize = 4;

/// What a [`flush`] did.
#[derive(Debug, Default)]
pub struct Flushed {
    /// Outcome files written (and their flags cleared).
    pub written: usize,
    /// Ids whose outcome file could not be written, with the reason. They stay pending:
    /// the next flush (the daemon's pass, a command's) tries them again.
    pub failed: Vec<(String, crate::error::Error)>,
}

impl Flushed {
    /// Whether the outcome of `id` failed to be written in this flush.
    pub fn failed_for(&self, id: &str) -> Option<&crate::error::Error> {
        self.failed.iter().find(|(f, _)| f == id).map(|(_, e)| e)
    }
}

/// What makes an outcome carry its receipt before its file is written: given the store,
/// the root, the row's seq and the outcome, the outcome to write.
pub type Attach = fn(&mut Store, &Root, i64, crate::protocol::Outcome) -> crate::protocol::Outcome;

/// Write every pending outcome.
///
/// One outcome whose file cannot be written (its place taken by a directory, a name the
/// file system refuses) stays pending and is reported in [`Flushed::failed`]; it never
/// holds back the others, which are written and cleared as usual. A failure of the whole
/// directory (the store, `syncfs`, the directory fsync) is an error.
pub fn flush(root: &Root, store: &mut Store, attach: Attach) -> Result<Flushed> {
    let dir = root.outbox();
    let mut report = Flushed::default();
    let mut after = 0;
    loop {
        let pending = store.outbox_pending(after, BATCH)?;
        let Some(&(last, _)) = pending.last() else {
            return Ok(report);
        };
        after = last;
        // Each outcome carries its signed receipt (rebuilt from the store, so writing the
        // same outcome again writes the same bytes).
        let pending: Vec<(i64, crate::protocol::Outcome)> = pending
            .into_iter()
            .map(|(seq, o)| (seq, attach(store, root, seq, o)))
            .collect();
        let mut done = Vec::with_capacity(pending.len());
        let mut fail = |outcome: &crate::protocol::Outcome, e: crate::error::Error| {
            tracing::warn!(
                id = %crate::text::for_log(outcome.id()),
                error = %crate::text::for_log(&e.to_string()),
                "outcome file not written; it stays pending"
            );
            report.failed.push((outcome.id().to_string(), e));
        };
        if pending.len() <= FSYNC_EACH_UP_TO {
            for (seq, outcome) in &pending {
                let name = format!("{}.json", outcome.id());
                match write_atomic(&dir, &name, outcome.to_file_json().as_bytes(), false) {
                    Ok(()) => {
                        tracing::info!(id = outcome.id(), "outcome written");
                        done.push(*seq);
                    }
                    Err(e) => fail(outcome, e),
                }
            }
        } else {
            // Group commit for files: write every temp file, make them all durable with
            // one syncfs, then rename. One fsync per file made a batch of outcomes cost a
            // millisecond each.
            let mut temps = Vec::with_capacity(pending.len());
            for (seq, outcome) in &pending {
                let name = format!("{}.json", outcome.id());
                match write_temp(&dir, &name, outcome.to_file_json().as_bytes(), false) {
                    Ok(tmp) => temps.push((*seq, outcome, tmp, dir.join(name))),
                    Err(e) => fail(outcome, e),
                }
            }
            let synced = sync_filesystem(&dir).and_then(|one_call| {
                if !one_call {
                    for (_, _, tmp, _) in &temps {
                        std::fs::File::open(tmp)
                            .and_then(|f| f.sync_all())
                            .map_err(|e| crate::error::Error::io(tmp, e))?;
                    }
                }
                Ok(())
            });
            if let Err(e) = synced {
                for (_, _, tmp, _) in &temps {
                    let _ = std::fs::remove_file(tmp);
                }
                return Err(e);
            }
            for (seq, outcome, tmp, target) in &temps {
                match std::fs::rename(tmp, target) {
                    Ok(()) => {
                        tracing::info!(id = outcome.id(), "outcome written");
                        done.push(*seq);
                    }
                    Err(e) => {
                        let _ = std::fs::remove_file(tmp);
                        fail(outcome, crate::error::Error::io(target, e));
                    }
                }
            }
        }
        if !done.is_empty() {
            sync_dir(&dir)?;
            store.mark_outbox_written(&done)?;
            report.written += done.len();
        }
        if pending.len() < BATCH {
            return Ok(report);
        }
    }
}

/// Remove the outcome file of a request id that was just accepted anew: any file there is
/// the error outcome of an earlier rejected input with the same id (rejections do not
/// reserve ids), and must not be mistaken for this request's outcome.
///
/// Through [`repair`] on a store handle of its own, so the file goes only while the request
/// is still open: a provider that answered the new request in the meantime has written
/// its real outcome there, which an unconditional unlink would delete for good. Rare (an
/// id reused after a rejection), so the extra handle costs nothing that matters.
pub fn remove_stale(root: &Root, id: &str) {
    let removed = root
        .open_store()
        .and_then(|mut store| repair(root, &mut store, Some(&[id])));
    match removed {
        Ok(0) => {}
        Ok(_) => tracing::info!(id, "removed the outcome of an earlier rejection of this id"),
        Err(e) => {
            tracing::warn!(id, error = %e, "cannot remove a stale outcome file (the daemon's start will)")
        }
    }
}

/// Remove the outcome files of open (pending or claimed) requests: error outcomes of earlier
/// rejections of their ids that a crash left behind (see the module docs). `ids` limits
/// the check to those ids; `None` checks every open request (the daemon's start). Returns
/// how many files were removed.
pub fn repair(root: &Root, store: &mut Store, ids: Option<&[&str]>) -> Result<usize> {
    store.while_open(ids, &mut |open| {
        let mut removed = 0;
        for id in open {
            let path = root.outcome_file(id);
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    removed += 1;
                    tracing::info!(
                        id = %crate::text::for_log(id),
                        "removed a stale outcome file: the request with this id is still open"
                    );
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(crate::error::Error::io(&path, e)),
            }
        }
        if removed > 0 {
            sync_dir(&root.outbox())?;
        }
        Ok(removed)
    })
}
