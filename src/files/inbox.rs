//! Ingesting `inbox/new/`: question files (`NAME.json`) and abort files (`ID.abort`).
//!
//! A batch is read and checked first, then committed in one transaction, and only after
//! the commit are the files removed (accepted) or moved to `rejected/` (rejected). A crash
//! at any point leaves each file either still in the inbox (read again: an accepted
//! request is recognised as the same content and accepted once, a rejection is recorded
//! once) or already handled. Files in `inbox/tmp/` and names starting with `.` are never
//! read.
//!
//! No single file can fail a batch: names derived from an input's name (its place in
//! `rejected/`, its reason file, temp files) are cut to fit `NAME_MAX`, and a file that
//! cannot be moved stays where it is for the next pass while the others go on. A batch is
//! bounded by bytes as well as by count, so large files cannot take the daemon's memory.
//! Rejections make their writes durable together: every reason file of a batch is written,
//! then one `syncfs`, then the inputs move, as outcome batches do.

use std::fs;
use std::path::{Path, PathBuf};

use super::grace;
use super::safe_read::{read_dropped_identified, FileIdentity, ReadError};
use crate::clock::Millis;
use crate::disk::atomic::{fit_name, sync_dir, sync_filesystem, write_temp};
use crate::error::{Error, Result};
use crate::protocol::check::{is_valid_id, parse_request};
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::prepared::Prepared;
use crate::root::Root;
use crate::store::{InboxInput, InboxVerdict, Store};
use crate::text::for_log;

/// What one ingest batch did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Ingested {
    /// Newly accepted requests (ids).
    pub accepted: Vec<String>,
    /// Re-deliveries of requests already accepted.
    pub redelivered: usize,
    /// Inputs rejected (file name, code).
    pub rejected: Vec<(String, Code)>,
    /// Requests aborted by abort files.
    pub aborted: Vec<String>,
    /// Files handled in the database that could not be removed from the inbox (they will
    /// be read again; not progress).
    pub stuck: usize,
    /// How many of the given names this batch took, in order: it stops early once it has
    /// read its byte budget; the rest are for the next batch.
    pub consumed: usize,
    /// Bytes of input read.
    pub bytes: u64,
}

/// The kind of an inbox entry, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// `NAME.json`: a request; the stem is the fallback id.
    Request(String),
    /// `ID.abort`: abort request ID.
    Abort(String),
    /// Anything else: rejected as `BAD_REQUEST`.
    Unknown,
}

/// Classify an inbox file name; `None` for names that are ignored (starting with `.`).
pub fn classify(name: &str) -> Option<EntryKind> {
    if name.starts_with('.') {
        return None;
    }
    Some(if let Some(stem) = name.strip_suffix(".json") {
        EntryKind::Request(stem.to_string())
    } else if let Some(stem) = name.strip_suffix(".abort") {
        EntryKind::Abort(stem.to_string())
    } else {
        EntryKind::Unknown
    })
}

/// The names in a directory that are not ignored, sorted (oldest-looking first is not
/// knowable cheaply; sorted keeps batches deterministic).
pub fn list_dir(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if let Some(name) = entry.file_name().to_str() {
            if !name.starts_with('.') {
                names.push(name.to_string());
            }
        } else {
            // Not UTF-8: cannot be an id; move it aside under a readable name, unique
            // (the raw bytes in hex, or a hash of them when that would not fit), so two such
            // names can never land on the same target, and within NAME_MAX.
            let lossy = entry.file_name().to_string_lossy().replace('\u{fffd}', "_");
            let raw = entry.file_name().as_encoded_bytes().to_vec();
            let tag = if raw.len() <= 48 {
                crate::protocol::digest::hex(&raw)
            } else {
                use sha2::{Digest, Sha256};
                format!(
                    "h{}",
                    crate::protocol::digest::hex(&Sha256::digest(&raw)[..8])
                )
            };
            let target = dir.join(format!("{}.{tag}.badname", fit_name(&lossy, 120)));
            if fs::symlink_metadata(&target).is_err() {
                if let Err(e) = fs::rename(entry.path(), &target) {
                    tracing::warn!(file = %crate::text::path_for_log(&entry.path()), error = %for_log(&e.to_string()), "cannot rename a non-UTF-8 file name");
                }
            }
        }
    }
    // Requests before aborts, so an abort dropped together with its request (one scan,
    // even one batch) finds it.
    names.sort_by(|a, b| listing_order(a, b));
    Ok(names)
}

/// The order of [`list_dir`]'s names: request files before abort files, each by name.
pub fn listing_order(a: &str, b: &str) -> std::cmp::Ordering {
    (a.ends_with(".abort"), a).cmp(&(b.ends_with(".abort"), b))
}

/// One read inbox file: what the store's batch takes.
type Input = InboxInput;

/// The bytes of input it holds (what a batch's byte budget counts).
fn size(input: &Input) -> u64 {
    {
        match input {
            Input::Request { raw, .. } | Input::Reject { raw, .. } => raw.len() as u64,
            Input::Abort { reason, .. } => reason.as_ref().map_or(0, |r| r.len() as u64),
        }
    }
}

/// The text recorded of an input: lossy UTF-8 (without a copy when the bytes are valid)
/// and no U+0000 ([`crate::protocol::syntax::recorded_text`]).
fn into_text(bytes: Vec<u8>) -> String {
    crate::protocol::syntax::recorded_text(bytes)
}

/// Whether an input that cannot be judged yet waits out the grace ([`super::grace`]): the
/// daemon's batches do; an offline check judges what it is given at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settle {
    /// Leave an unfinished or unreadable file alone while it is settling.
    Wait,
    /// Judge it now.
    Judge,
}

/// Read one inbox file into an [`Input`], with the identity of the file read when it was
/// opened; `None` when it vanished, cannot be read now, or (with [`Settle::Wait`]) is
/// unfinished or unreadable and still settling.
fn read_input(
    dir: &Path,
    name: &str,
    max_bytes: u64,
    settle: Settle,
) -> Option<(Input, Option<FileIdentity>)> {
    let mut identity = None;
    let input = read_input_into(dir, name, max_bytes, settle, &mut identity)?;
    Some((input, identity))
}

fn read_input_into(
    dir: &Path,
    name: &str,
    max_bytes: u64,
    settle: Settle,
    identity: &mut Option<FileIdentity>,
) -> Option<Input> {
    let kind = classify(name)?;
    let path = dir.join(name);
    let (bytes, mtime) = match read_file(&path, name, max_bytes, settle) {
        Reading::Read(bytes, mtime, id) => {
            *identity = Some(id);
            (bytes, mtime)
        }
        Reading::Later => return None,
        Reading::Refused(error) => {
            let id = match &kind {
                EntryKind::Request(s) => Some(s.clone()),
                EntryKind::Abort(_) | EntryKind::Unknown => None,
            };
            return Some(refused(name, id, String::new(), error));
        }
    };
    // A request is parsed once: a file that parses is whole, so only one that does not is
    // asked whether it looks cut short (that check parses it again). An abort file may well
    // be empty (no reason given): only a request waits.
    let parsed = match &kind {
        EntryKind::Request(_) => Some(parse_request(&bytes)),
        EntryKind::Abort(_) | EntryKind::Unknown => None,
    };
    if settle == Settle::Wait
        && matches!(parsed, Some(Err(_)))
        && grace::unfinished(&bytes)
        && grace::settling(&path)
    {
        tracing::debug!(file = %for_log(name), "inbox file still being written; judged after the grace");
        return None;
    }
    Some(match kind {
        EntryKind::Unknown => refused(
            name,
            None,
            into_text(bytes),
            UserQuestionError::new(
                Code::BadRequest,
                format!("{name}: unknown file kind; drop NAME.json to ask or ID.abort to abort"),
            ),
        ),
        EntryKind::Abort(id) => abort_input(name, id, bytes),
        EntryKind::Request(stem) => {
            let parsed = parsed.unwrap_or_else(|| parse_request(&bytes));
            request_input(name, stem, parsed, bytes, mtime)
        }
    })
}

/// Inbox file `name` refused as it is, with no context (the file is not a request that
/// parsed): under `id` when its name gives one.
fn refused(name: &str, id: Option<String>, raw: String, error: UserQuestionError) -> Input {
    Input::Reject {
        name: name.to_string(),
        id,
        context: None,
        raw,
        error,
    }
}

/// What reading an inbox file gave.
enum Reading {
    /// Its bytes, its modification time and the identity of the file read.
    Read(Vec<u8>, i64, FileIdentity),
    /// Nothing to judge now: gone, still settling, or unreadable for a reason that may pass.
    Later,
    /// The file itself is refused (not a regular file, too large, hard-linked, unreadable).
    Refused(UserQuestionError),
}

/// Read inbox file `path` (named `name`), bounded and never through a link.
fn read_file(path: &Path, name: &str, max_bytes: u64, settle: Settle) -> Reading {
    match read_dropped_identified(path, max_bytes) {
        Ok((bytes, mtime, id)) => Reading::Read(bytes, mtime, id),
        Err(ReadError::Gone) => Reading::Later,
        Err(
            e @ (ReadError::NotRegular(_) | ReadError::TooLarge { .. } | ReadError::HardLinked(_)),
        ) => Reading::Refused(UserQuestionError::new(
            Code::BadRequest,
            format!("{name}: {e}"),
        )),
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            // Not the daemon's failure but the file's: judged once it stood still.
            if settle == Settle::Wait && grace::settling(path) {
                tracing::debug!(file = %for_log(name), "inbox file not readable yet; judged after the grace");
                return Reading::Later;
            }
            Reading::Refused(UserQuestionError::new(
                Code::BadRequest,
                format!("{name}: {}", grace::unreadable_hint(path, &e, "inbox")),
            ))
        }
        Err(ReadError::Io(e)) => {
            tracing::warn!(file = %for_log(name), error = %for_log(&e.to_string()), "cannot read inbox file; will retry");
            Reading::Later
        }
    }
}

/// An abort file `ID.abort`: its reason (the first 1000 characters of its text, if any),
/// or its rejection when `ID` is not a valid request id.
fn abort_input(name: &str, id: String, bytes: Vec<u8>) -> Input {
    if !is_valid_id(&id) {
        return refused(
            name,
            None,
            into_text(bytes),
            UserQuestionError::new(
                Code::BadRequest,
                format!("{name}: {id:?} is not a valid request id"),
            ),
        );
    }
    let raw = into_text(bytes);
    let reason = raw.trim();
    Input::Abort {
        name: name.to_string(),
        id,
        reason: (!reason.is_empty()).then(|| reason.chars().take(1000).collect()),
    }
}

/// A request file `STEM.json`: the request with its stored forms prepared, or its
/// rejection, with the id and context salvaged for the audit and the outbox.
fn request_input(
    name: &str,
    stem: String,
    parsed: std::result::Result<crate::protocol::types::Request, UserQuestionError>,
    bytes: Vec<u8>,
    mtime: i64,
) -> Input {
    match parsed {
        Ok(mut request) => Input::Request {
            name: name.to_string(),
            prepared: {
                // Under the id the checks will give it (a call's, for a request on one).
                let id = crate::protocol::continued::own_id(&request);
                Prepared::of(&mut request, Some(id.as_deref().unwrap_or(&stem))).map(Box::new)
            },
            stem,
            request,
            raw: into_text(bytes),
            mtime,
        },
        Err(mut error) => {
            if grace::unfinished(&bytes) {
                error.message = format!(
                    "{}; {}",
                    error.message,
                    grace::unfinished_hint(&bytes, "inbox")
                );
            }
            let (id, context) = crate::protocol::check::salvage_id_context(&bytes);
            Input::Reject {
                name: name.to_string(),
                id: id.or(Some(stem)),
                context,
                raw: into_text(bytes),
                error,
            }
        }
    }
}

/// An offline check always finds the caller a live root and a provider live: those two
/// checks need the database and happen at acceptance.
struct OfflineEnv;

impl crate::protocol::check::AskEnv for OfflineEnv {
    fn caller(&self, _agent: &crate::protocol::AgentRef) -> crate::protocol::check::CallerStatus {
        crate::protocol::check::CallerStatus::LiveRoot
    }
    fn provider_live(&self, _context: &str) -> bool {
        true
    }
}

/// What an offline validation found valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Valid {
    /// A request file, with its id.
    Request(String),
    /// An abort file for this request id.
    Abort(String),
}

/// Check a file offline exactly as ingestion reads and checks it (same safe read, same
/// parse, same checks in the same order), except the registry (order 3), the provider
/// (order 5) and duplicate ids, which need the database.
pub fn validate_file(
    path: &Path,
    max_bytes: u64,
    now: Millis,
) -> std::result::Result<Valid, UserQuestionError> {
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        UserQuestionError::new(
            Code::BadRequest,
            format!("{}: not a file name", path.display()),
        )
    })?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if name.starts_with('.') {
        return Err(UserQuestionError::new(
            Code::BadRequest,
            format!("{name}: names starting with '.' are ignored by the daemon"),
        ));
    }
    match read_input(dir, name, max_bytes, Settle::Judge).map(|(input, _)| input) {
        None => Err(UserQuestionError::new(
            Code::BadRequest,
            format!("{name}: cannot be read"),
        )),
        Some(Input::Reject { error, .. }) => Err(error),
        Some(Input::Abort { id, .. }) => Ok(Valid::Abort(id)),
        Some(Input::Request { stem, request, .. }) => {
            let ts = crate::clock::to_timestamp(now);
            let n = crate::protocol::check::check_structure(request, Some(&stem), ts)?;
            crate::protocol::check::check_ask(&n, ts, &OfflineEnv)?;
            Ok(Valid::Request(n.id))
        }
    }
}

/// A batch of inbox files read and parsed, not yet committed: what [`read_batch`] hands
/// to [`commit_batch`]. Reading touches only the files, so the daemon reads the next batch
/// on another thread while this one commits.
#[derive(Debug, Default)]
pub struct ReadBatch {
    inputs: Vec<Input>,
    /// The identity of each input's file as it was read (aligned with `inputs`).
    identities: Vec<Option<FileIdentity>>,
    /// How many of the given names the batch took, in order (see [`Ingested::consumed`]).
    pub consumed: usize,
    /// Bytes of input read.
    pub bytes: u64,
}

/// Read the named files of `dir` (`inbox/new/`), in order, stopping after the file that
/// brings the bytes read to `batch_bytes` (at least one file is always taken).
pub fn read_batch(dir: &Path, names: &[String], max_bytes: u64, batch_bytes: u64) -> ReadBatch {
    let mut out = ReadBatch::default();
    for name in names {
        out.consumed += 1;
        if let Some((input, identity)) = read_input(dir, name, max_bytes, Settle::Wait) {
            out.bytes += size(&input);
            out.inputs.push(input);
            out.identities.push(identity);
        }
        if out.bytes >= batch_bytes {
            break;
        }
    }
    out
}

/// The inbox files a committed batch handled, to remove: after the commit, and only the
/// file that was read (one dropped under the same name since is a new input and stays).
#[derive(Debug, Default)]
pub struct Removals {
    dir: PathBuf,
    files: Vec<(String, Option<FileIdentity>)>,
}

impl Removals {
    /// Remove the files; returns how many are still there (a removal failed: they will be
    /// read again, which finds them handled).
    pub fn run(self) -> usize {
        let mut stuck = 0;
        for (name, identity) in self.files {
            let path = self.dir.join(&name);
            if identity.is_some() && FileIdentity::at(&path) != identity {
                // Gone already, or replaced by a new drop under the same name.
                continue;
            }
            if let Err(e) = fs::remove_file(&path) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(file = %for_log(&name), error = %for_log(&e.to_string()), "cannot remove ingested file");
                    stuck += 1;
                }
            }
        }
        stuck
    }

    /// Whether there is nothing to remove.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Ingest the named files of `inbox/new/` as one transaction at `now`, in order, stopping
/// after the file that brings the bytes read to `batch_bytes` (at least one file is always
/// taken); [`Ingested::consumed`] says how many names were taken.
pub fn ingest(
    root: &Root,
    store: &mut Store,
    names: &[String],
    max_bytes: u64,
    batch_bytes: u64,
    now: Millis,
) -> Result<Ingested> {
    let batch = read_batch(&root.inbox_new(), names, max_bytes, batch_bytes);
    let (mut out, removals) = commit_batch(root, store, batch, now)?;
    out.stuck += removals.run();
    Ok(out)
}

/// Commit a [`ReadBatch`] in one transaction, then move its rejected files to `rejected/`
/// beside their reasons. The files it accepted (or found re-delivered, or aborted with)
/// are returned as [`Removals`] for the caller to remove: the commit is done, so they may
/// go at any time, and a crash before they go only means they are read again.
pub fn commit_batch(
    root: &Root,
    store: &mut Store,
    batch: ReadBatch,
    now: Millis,
) -> Result<(Ingested, Removals)> {
    let dir = root.inbox_new();
    let mut out = Ingested {
        consumed: batch.consumed,
        bytes: batch.bytes,
        ..Default::default()
    };
    let mut removals = Removals {
        dir: dir.clone(),
        files: Vec::new(),
    };
    let ReadBatch {
        inputs, identities, ..
    } = batch;
    if inputs.is_empty() {
        return Ok((out, removals));
    }
    // (file name, error to write beside it) for after the commit; None = remove.
    let mut after: Vec<(String, Option<UserQuestionError>)> = Vec::with_capacity(inputs.len());
    let mut stale: Vec<String> = Vec::new();
    let names: Vec<String> = inputs
        .iter()
        .map(|i| match i {
            Input::Request { name, .. }
            | Input::Abort { name, .. }
            | Input::Reject { name, .. } => name.clone(),
        })
        .collect();
    // One transaction for the batch; each input's verdict stands on its own.
    let verdicts = store.ingest(inputs)?;
    for (name, verdict) in names.into_iter().zip(verdicts) {
        match verdict {
            InboxVerdict::Accepted {
                id,
                context,
                replaced_rejection,
            } => {
                tracing::info!(id = %id, context = %context, file = %for_log(&name), "request accepted");
                if replaced_rejection {
                    stale.push(id.clone());
                }
                out.accepted.push(id);
                after.push((name, None));
            }
            InboxVerdict::Redelivered(id) => {
                tracing::info!(id = %id, file = %for_log(&name), "re-delivery of an accepted request");
                out.redelivered += 1;
                after.push((name, None));
            }
            InboxVerdict::Aborted(id) => {
                tracing::info!(id = %id, "request aborted by abort file");
                out.aborted.push(id);
                after.push((name, None));
            }
            InboxVerdict::AbortIgnored(id) => {
                tracing::info!(id = %id, "abort file for a final request; nothing to do");
                after.push((name, None));
            }
            InboxVerdict::Rejected(e) => after.push((name, Some(e))),
        }
    }
    // Committed: stale error outcomes of reused ids go first, then the files.
    for id in &stale {
        super::outbox::remove_stale(root, id);
    }
    let mut rejected = Vec::new();
    for ((name, error), identity) in after.into_iter().zip(identities) {
        match error {
            None => removals.files.push((name, identity)),
            Some(e) => {
                tracing::warn!(file = %for_log(&name), code = %e.code, message = %for_log(&e.message), "input rejected");
                out.rejected.push((name.clone(), e.code));
                rejected.push(RejectedFile {
                    name,
                    error: e,
                    keep: None,
                    identity,
                });
            }
        }
    }
    out.stuck += move_rejected(&dir, &root.rejected(), &rejected, now);
    Ok((out, removals))
}

/// The longest stem (file name without `.json`) kept as it is in a rejected directory:
/// room is left for `.NOW-N` (a collision), `.error.json`, and `.json`.
const MAX_REJECTED_STEM: usize = 200;

/// An input to move into a rejected directory beside its reason.
#[derive(Debug, Clone)]
pub struct RejectedFile {
    /// Its name in the source directory.
    pub name: String,
    /// Why it was rejected (written as `STEM.error.json`).
    pub error: UserQuestionError,
    /// What to keep in its place instead of the file itself (an answer file with its lease
    /// secret redacted); `None` moves the file as it is.
    pub keep: Option<Vec<u8>>,
    /// The file that was read and judged, when known: a different file found under the name
    /// (dropped since) is a new input, and is left to be judged rather than moved.
    pub identity: Option<FileIdentity>,
}

/// The names an input takes in `rejected_dir`: (input, reason file, was the name cut).
/// Never an existing name, so an earlier rejection is never overwritten; a name too long to
/// derive names from is cut with a hash ([`fit_name`]).
fn rejected_names(rejected_dir: &Path, name: &str, now: Millis) -> (String, String, bool) {
    let is_json = name.ends_with(".json");
    let full = name.strip_suffix(".json").unwrap_or(name);
    let base = fit_name(full, MAX_REJECTED_STEM);
    let cut = base.len() != full.len();
    let with_ext = |stem: &str| {
        if is_json {
            format!("{stem}.json")
        } else {
            stem.to_string()
        }
    };
    let mut stem = base.to_string();
    let mut n = 0;
    loop {
        let (target, reason) = (with_ext(&stem), format!("{stem}.error.json"));
        if fs::symlink_metadata(rejected_dir.join(&target)).is_err()
            && fs::symlink_metadata(rejected_dir.join(&reason)).is_err()
        {
            return (target, reason, cut);
        }
        n += 1;
        stem = format!("{base}.{now}-{n}");
    }
}

/// Whether reason files are fsynced one by one (where there is no `syncfs`).
const FSYNC_EACH: bool = !cfg!(target_os = "linux");

/// Move each `src_dir/NAME` into `rejected_dir` (never overwriting an earlier rejection)
/// beside its error, `STEM.error.json`. All the reasons are written first and made durable
/// together (one `syncfs`), and only then do the inputs move: a crash can leave a reason
/// whose input is still in `src_dir` (rejected again later, under a fresh name), never an
/// input in `rejected_dir` without its reason. A file that cannot be moved stays where it
/// is (logged) and the others go on; returns how many stayed.
pub fn move_rejected(
    src_dir: &Path,
    rejected_dir: &Path,
    files: &[RejectedFile],
    now: Millis,
) -> usize {
    let mut stuck = 0;
    let mut planned = Vec::with_capacity(files.len());
    for file in files {
        match still_there(&src_dir.join(&file.name), file) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                tracing::warn!(file = %for_log(&file.name), error = %for_log(&e.to_string()), "cannot move a rejected file; will retry");
                stuck += 1;
                continue;
            }
        }
        match write_reason(rejected_dir, file, now) {
            Ok(p) => planned.push(p),
            Err(e) => {
                tracing::warn!(file = %for_log(&file.name), error = %for_log(&e.to_string()), "cannot write the reason of a rejected file; will retry");
                stuck += 1;
            }
        }
    }
    if planned.is_empty() {
        return stuck;
    }
    // The reasons are durable before any input moves.
    let synced = sync_filesystem(rejected_dir).and_then(|_| sync_dir(rejected_dir));
    if let Err(e) = synced {
        tracing::warn!(error = %for_log(&e.to_string()), "cannot make rejection reasons durable; will retry");
        for p in &planned {
            if let Some(tmp) = &p.keep_tmp {
                let _ = fs::remove_file(tmp);
            }
        }
        return stuck + planned.len();
    }
    for p in planned {
        if !move_input(src_dir, rejected_dir, &p) {
            stuck += 1;
        }
    }
    for d in [rejected_dir, src_dir] {
        if let Err(e) = sync_dir(d) {
            tracing::warn!(dir = %crate::text::path_for_log(d), error = %for_log(&e.to_string()), "cannot fsync a directory");
        }
    }
    stuck
}

/// A rejected file whose reason is written, waiting to move beside it.
struct Planned<'a> {
    file: &'a RejectedFile,
    /// Its name in the rejected folder.
    target: String,
    /// Its reason's name there.
    reason: String,
    /// The redacted copy to put in its place, written under a temporary name.
    keep_tmp: Option<PathBuf>,
}

/// Whether the rejected file is still at `src` as it was read; `false` when it is gone or
/// was replaced since (the new file is judged on its own).
fn still_there(src: &Path, file: &RejectedFile) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    match fs::symlink_metadata(src) {
        Ok(m) => Ok(file
            .identity
            .is_none_or(|id| id == FileIdentity(m.dev(), m.ino()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Write the reason of a rejected file into `rejected_dir` (and its redacted copy, under a
/// temporary name), under names no earlier rejection has.
fn write_reason<'a>(
    rejected_dir: &Path,
    file: &'a RejectedFile,
    now: Millis,
) -> Result<Planned<'a>> {
    let (target, reason, cut) = rejected_names(rejected_dir, &file.name, now);
    let mut error = file.error.clone();
    if cut && !error.message.contains(&file.name) {
        // The stored names are cut: the reason says the whole name.
        error.message = format!("{}: {}", file.name, error.message);
    }
    let mut doc = serde_json::to_string_pretty(&error).expect("errors serialize");
    doc.push('\n');
    let tmp = write_temp(rejected_dir, &reason, doc.as_bytes(), FSYNC_EACH)?;
    if let Err(e) = fs::rename(&tmp, rejected_dir.join(&reason)) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(rejected_dir.join(&reason), e));
    }
    let keep_tmp = match &file.keep {
        Some(bytes) => Some(write_temp(rejected_dir, &target, bytes, FSYNC_EACH)?),
        None => None,
    };
    Ok(Planned {
        file,
        target,
        reason,
        keep_tmp,
    })
}

/// Move a planned input beside its reason (its redacted copy takes its place, then the
/// input goes); one taken meanwhile takes its reason with it. Whether it did not stay.
fn move_input(src_dir: &Path, rejected_dir: &Path, p: &Planned) -> bool {
    let src = src_dir.join(&p.file.name);
    let dst = rejected_dir.join(&p.target);
    let moved = match &p.keep_tmp {
        Some(tmp) => fs::rename(tmp, &dst).and_then(|()| match fs::remove_file(&src) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = fs::remove_file(&dst);
                Err(e)
            }
            r => r,
        }),
        None => fs::rename(&src, &dst),
    };
    match moved {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Taken meanwhile: no input, so no reason either.
            let _ = fs::remove_file(rejected_dir.join(&p.reason));
            true
        }
        Err(e) => {
            tracing::warn!(file = %for_log(&p.file.name), error = %for_log(&e.to_string()), "cannot move a rejected file; will retry");
            if let Some(tmp) = &p.keep_tmp {
                let _ = fs::remove_file(tmp);
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, question: &str) -> String {
        format!(
            r#"{{"id":"{id}","questions":[{{"id":"q","question":"{question}","options":[{{"label":"a"}},{{"label":"b"}}]}}]}}"#
        )
    }

    /// The daemon removes a committed batch's files later, on another thread: a file
    /// dropped under the same name in between is a new input and must stay.
    #[test]
    fn removals_take_only_the_file_that_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        root.ensure_layout().unwrap();
        let mut store = root.open_store().unwrap();
        let new = root.inbox_new();
        for id in ["kept", "gone"] {
            fs::write(new.join(format!("{id}.json")), request(id, "Which?")).unwrap();
        }
        let names = vec!["gone.json".to_string(), "kept.json".to_string()];
        let batch = read_batch(&new, &names, 1 << 20, 1 << 20);
        assert_eq!(batch.consumed, 2);
        let (out, removals) = commit_batch(&root, &mut store, batch, 1_000).unwrap();
        assert_eq!(out.accepted.len(), 2);
        // Both committed, neither removed yet; then "kept.json" is dropped again, as a
        // writer does: a new file renamed over the name.
        let tmp = root.inbox_tmp().join("kept.json");
        fs::write(&tmp, request("kept", "Which, again?")).unwrap();
        fs::rename(&tmp, new.join("kept.json")).unwrap();
        assert_eq!(removals.run(), 0);
        assert!(!new.join("gone.json").exists(), "the file read is removed");
        let left = fs::read_to_string(new.join("kept.json")).unwrap();
        assert!(left.contains("again"), "the new drop stays: {left}");
    }

    /// The same for a rejected file: a corrected file dropped under the name of a bad one
    /// after the bad one was read is not moved to `rejected/` with the old reason.
    #[test]
    fn a_rejected_file_replaced_since_it_was_read_stays_to_be_judged() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        root.ensure_layout().unwrap();
        let mut store = root.open_store().unwrap();
        let new = root.inbox_new();
        fs::write(new.join("fixed.json"), "{ not json").unwrap();
        let batch = read_batch(&new, &["fixed.json".to_string()], 1 << 20, 1 << 20);
        let tmp = root.inbox_tmp().join("fixed.json");
        fs::write(&tmp, request("fixed", "Which?")).unwrap();
        fs::rename(&tmp, new.join("fixed.json")).unwrap();
        let (out, _) = commit_batch(&root, &mut store, batch, 1_000).unwrap();
        assert_eq!(out.rejected.len(), 1, "the bytes read were judged: {out:?}");
        let left = fs::read_to_string(new.join("fixed.json")).unwrap();
        assert!(left.contains("Which?"), "the corrected file stays: {left}");
        let moved: Vec<_> = fs::read_dir(root.rejected()).unwrap().collect();
        assert!(moved.is_empty(), "nothing moved: {moved:?}");
    }
}
