//! Retention (`dshq prune`, `dshq daemon --prune-after`): final requests finished before a
//! cut are written to an export file (NDJSON, `dshq export`'s records), the file is made
//! durable, and only then does the one write transaction that removes them commit
//! ([`Store::prune`]). A kill at any moment loses nothing that is not in a complete,
//! fsynced export: before the commit everything is still in the store (and the export,
//! if already renamed into place, is a copy that may be made again); after it, the export
//! was complete before it.
//!
//! The export is written under a temporary name beside its target, fsynced, renamed into
//! place (never over an existing file) and its directory fsynced, all inside the prune's
//! transaction, before the commit.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::clock::Millis;
use crate::core::audit::Actor;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::{PruneExport, Pruned, Store};

/// Test builds only (the `test-clock` feature): after the export is durable and before the
/// deleting transaction commits, create the file this names and wait while it exists (up
/// to a minute), so a test can kill the process exactly there.
pub const PAUSE_ENV: &str = "DSHQ_TEST_PRUNE_PAUSE";

/// What a prune did, and where its export went.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PruneReport {
    /// The cut: final requests finished before it were removed.
    pub before: String,
    /// The export file (`None` when nothing was removed and no file was asked for).
    pub export: Option<PathBuf>,
    /// Records written to it.
    pub records: u64,
    /// What was removed.
    #[serde(flatten)]
    pub pruned: Pruned,
    /// Outcome files removed (of ids no request holds any more).
    pub outcomes_removed: usize,
}

/// The export file being written.
struct ExportFile {
    target: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
    records: u64,
    synced: bool,
    root: Root,
    outcomes_removed: usize,
}

impl ExportFile {
    fn new(target: &Path, root: &Root) -> Result<ExportFile> {
        if target.exists() {
            return Err(Error::Invalid(format!(
                "{} exists: prune writes a new export file and never replaces one",
                crate::text::path_for_log(target)
            )));
        }
        let name = target
            .file_name()
            .ok_or_else(|| Error::Invalid("the export file needs a file name".into()))?;
        let tmp = target.with_file_name(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        Ok(ExportFile {
            target: target.to_path_buf(),
            tmp,
            out: None,
            records: 0,
            synced: false,
            root: root.clone(),
            outcomes_removed: 0,
        })
    }

    fn writer(&mut self) -> Result<&mut BufWriter<File>> {
        if self.out.is_none() {
            let _ = fs::remove_file(&self.tmp);
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&self.tmp)
                .map_err(|e| Error::io(&self.tmp, e))?;
            self.out = Some(BufWriter::with_capacity(1 << 20, f));
        }
        Ok(self.out.as_mut().expect("opened above"))
    }

    fn discard(&mut self) {
        if !self.synced && self.out.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl PruneExport for ExportFile {
    fn record(
        &mut self,
        _kind: &str,
        fields: serde_json::Map<String, serde_json::Value>,
    ) -> Result<()> {
        let tmp = self.tmp.clone();
        let out = self.writer()?;
        serde_json::to_writer(&mut *out, &fields).map_err(|e| Error::io(&tmp, e.into()))?;
        out.write_all(b"\n").map_err(|e| Error::io(&tmp, e))?;
        self.records += 1;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        let tmp = self.tmp.clone();
        let out = self.writer()?;
        out.flush().map_err(|e| Error::io(&tmp, e))?;
        out.get_ref().sync_all().map_err(|e| Error::io(&tmp, e))?;
        // Into place without replacing anything (a file made meanwhile wins, and this
        // prune fails before it removes anything).
        fs::hard_link(&self.tmp, &self.target).map_err(|e| Error::io(&self.target, e))?;
        let _ = fs::remove_file(&self.tmp);
        let dir = match self.target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(&dir, e))?;
        self.synced = true;
        self.out = None;
        pause_for_tests();
        Ok(())
    }

    fn committed(&mut self, ids: &[String]) -> Result<usize> {
        let mut n = 0;
        for id in ids {
            let path = self.root.outcome_file(id);
            match fs::remove_file(&path) {
                Ok(()) => n += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(id, error = %e, "cannot remove a pruned request's outcome file")
                }
            }
        }
        self.outcomes_removed += n;
        Ok(n)
    }
}

#[cfg(feature = "test-clock")]
fn pause_for_tests() {
    let Some(path) = std::env::var_os(PAUSE_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    if fs::write(&path, b"paused\n").is_err() {
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while path.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[cfg(not(feature = "test-clock"))]
fn pause_for_tests() {}

/// Prune final requests finished before `before` into the new file `export`. With
/// `always_write`, the file is written even when nothing is removed (empty), so a script
/// can rely on it; otherwise (the daemon's schedule) no file is left then.
pub fn prune(
    store: &mut Store,
    root: &Root,
    before: Millis,
    limit: Option<u64>,
    actor: &Actor,
    export: &Path,
    always_write: bool,
) -> Result<PruneReport> {
    let mut file = ExportFile::new(export, root)?;
    let result = store.prune(before, limit, actor, &mut file);
    let pruned = match result {
        Ok(p) => p,
        Err(e) => {
            file.discard();
            return Err(e);
        }
    };
    if !file.synced && always_write {
        file.sync()?;
    }
    file.discard();
    if pruned.requests > 0 || pruned.events > 0 {
        tracing::info!(
            requests = pruned.requests,
            events = pruned.events,
            export = %crate::text::path_for_log(export),
            "pruned"
        );
    }
    Ok(PruneReport {
        before: crate::clock::rfc3339(before),
        export: file.synced.then(|| export.to_path_buf()),
        records: file.records,
        outcomes_removed: file.outcomes_removed,
        pruned,
    })
}

/// How many requests one scheduled prune removes at most: its transaction holds the write
/// lock (about 1.5 s at the rate measured on a 1M store), and the daemon runs the next
/// one after its next pass until it has caught up.
pub const SCHEDULED_LIMIT: u64 = 10_000;

/// The daemon's scheduled prune: everything finished more than `after` ago (at most
/// [`SCHEDULED_LIMIT`] requests), exported to a new `prune-TIME.ndjson` in `dir`.
pub fn scheduled(
    store: &mut Store,
    root: &Root,
    after: std::time::Duration,
    dir: &Path,
) -> Result<PruneReport> {
    let now = crate::clock::now_ms();
    let before = now - crate::clock::duration_ms(after);
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let stamp = crate::clock::rfc3339(now).replace(':', "");
    let mut name = dir.join(format!("prune-{stamp}.ndjson"));
    let mut n = 1;
    while name.exists() {
        n += 1;
        name = dir.join(format!("prune-{stamp}-{n}.ndjson"));
    }
    prune(
        store,
        root,
        before,
        Some(SCHEDULED_LIMIT),
        &Actor::Daemon,
        &name,
        false,
    )
}
