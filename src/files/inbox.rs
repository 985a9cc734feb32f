//! Ingesting `inbox/new/`: question files (`NAME.json`) and abort files (`ID.abort`).
//!
//! A batch is read and checked first, then committed in one transaction, and only after
//! the commit are the files removed (accepted) or moved to `rejected/` (rejected). A crash
//! at any point leaves each file either still in the inbox (read again: an accepted
//! request is recognised as the same content and accepted once, a rejection is recorded
//! once) or already handled. Files in `inbox/tmp/` and names starting with `.` are never
//! read.

use std::fs;
use std::path::Path;

use rusqlite::Connection;

use super::atomic::{sync_dir, write_atomic};
use super::safe_read::{read_limited_with_mtime, ReadError};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::protocol::check::{is_valid_id, parse_request};
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::Request;
use crate::root::Root;
use crate::store::{self, requests};

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
            // Not UTF-8: cannot be an id; move it aside under a readable name.
            // Unique, so two such names can never land on the same target.
            let lossy = entry.file_name().to_string_lossy().replace('\u{fffd}', "_");
            let raw = entry.file_name().as_encoded_bytes().to_vec();
            let target = dir.join(format!(
                "{lossy}.{}.badname",
                crate::store::events::hex(&raw)
            ));
            if fs::symlink_metadata(&target).is_err() {
                let _ = fs::rename(entry.path(), target);
            }
        }
    }
    // Requests before aborts, so an abort dropped together with its request (one scan,
    // even one batch) finds it.
    names.sort_by(|a, b| (a.ends_with(".abort"), a).cmp(&(b.ends_with(".abort"), b)));
    Ok(names)
}

enum Input {
    Request {
        name: String,
        stem: String,
        request: Request,
        raw: String,
        mtime: i64,
    },
    Abort {
        name: String,
        id: String,
        reason: Option<String>,
    },
    Reject {
        name: String,
        id: Option<String>,
        context: Option<String>,
        raw: String,
        error: UserQuestionError,
    },
}

/// Read one inbox file into an [`Input`]; `None` when it vanished or cannot be read now.
fn read_input(dir: &Path, name: &str, max_bytes: u64) -> Option<Input> {
    let kind = classify(name)?;
    let path = dir.join(name);
    let stem_id = match &kind {
        EntryKind::Request(s) => Some(s.clone()),
        EntryKind::Abort(_) | EntryKind::Unknown => None,
    };
    let reject = |error: UserQuestionError, raw: String| Input::Reject {
        name: name.to_string(),
        id: stem_id.clone(),
        context: None,
        raw,
        error,
    };
    let (bytes, mtime) = match read_limited_with_mtime(&path, max_bytes) {
        Ok(b) => b,
        Err(ReadError::Gone) => return None,
        Err(e @ (ReadError::NotRegular(_) | ReadError::TooLarge { .. })) => {
            return Some(reject(
                UserQuestionError::new(Code::BadRequest, format!("{name}: {e}")),
                String::new(),
            ))
        }
        Err(ReadError::Io(e)) => {
            tracing::warn!(file = name, error = %e, "cannot read inbox file; will retry");
            return None;
        }
    };
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    match kind {
        EntryKind::Unknown => Some(reject(
            UserQuestionError::new(
                Code::BadRequest,
                format!("{name}: unknown file kind; drop NAME.json to ask or ID.abort to abort"),
            ),
            raw,
        )),
        EntryKind::Abort(id) => {
            if !is_valid_id(&id) {
                return Some(reject(
                    UserQuestionError::new(
                        Code::BadRequest,
                        format!("{name}: {id:?} is not a valid request id"),
                    ),
                    raw,
                ));
            }
            let reason = raw.trim();
            Some(Input::Abort {
                name: name.to_string(),
                id,
                reason: (!reason.is_empty()).then(|| reason.chars().take(1000).collect()),
            })
        }
        EntryKind::Request(stem) => match parse_request(&bytes) {
            Ok(request) => Some(Input::Request {
                name: name.to_string(),
                stem,
                request,
                raw,
                mtime,
            }),
            Err(error) => {
                // Salvage the id and context for the audit and the outbox, if readable.
                let (id, context) = crate::protocol::check::salvage_id_context(&bytes);
                Some(Input::Reject {
                    name: name.to_string(),
                    id: id.or(Some(stem)),
                    context,
                    raw,
                    error,
                })
            }
        },
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
    match read_input(dir, name, max_bytes) {
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

/// Ingest the named files of `inbox/new/` as one transaction at `now`.
pub fn ingest(
    root: &Root,
    conn: &mut Connection,
    names: &[String],
    max_bytes: u64,
    now: Millis,
) -> Result<Ingested> {
    let dir = root.inbox_new();
    let inputs: Vec<Input> = names
        .iter()
        .filter_map(|n| read_input(&dir, n, max_bytes))
        .collect();
    if inputs.is_empty() {
        return Ok(Ingested::default());
    }
    // (file name, error to write beside it) for after the commit; None = remove.
    let mut after: Vec<(String, Option<UserQuestionError>)> = Vec::with_capacity(inputs.len());
    let mut out = Ingested::default();
    let mut stale: Vec<String> = Vec::new();
    store::write_now(conn, |tx, now| {
        for input in inputs {
            match input {
                Input::Request {
                    name,
                    stem,
                    request,
                    raw,
                    mtime,
                } => {
                    let source = format!("inbox:{name}");
                    // This very file was judged already (committed as rejected, then the
                    // daemon died or the move failed): finish the move with that verdict
                    // instead of judging it again, which could now flip it to accepted.
                    // A file dropped again is newer than the rejection and is judged anew.
                    let id = request.id.clone().unwrap_or_else(|| stem.clone());
                    if let Some(e) = requests::earlier_rejection(tx, &id, &source, &raw, mtime)? {
                        after.push((name.clone(), Some(e)));
                        continue;
                    }
                    // Kept for the rejection record; the request itself moves into accept.
                    let (req_id, req_context) = (request.id.clone(), request.context.clone());
                    match requests::accept(tx, request, Some(&stem), &source, now) {
                        Ok(a) => {
                            if a.new {
                                tracing::info!(id = %a.id, context = %a.context, file = %name, "request accepted");
                                if a.replaced_rejection {
                                    stale.push(a.id.clone());
                                }
                                out.accepted.push(a.id);
                            } else {
                                tracing::info!(id = %a.id, file = %name, "re-delivery of an accepted request");
                                out.redelivered += 1;
                            }
                            after.push((name.clone(), None));
                        }
                        Err(Error::Question(e)) => {
                            let id = req_id.clone().unwrap_or_else(|| stem.clone());
                            let rej = requests::Rejection {
                                id: Some(&id),
                                context: req_context.as_deref(),
                                body: &raw,
                                source: &source,
                                actor: Some(crate::core::audit::Actor::Daemon),
                            };
                            requests::record_rejection(tx, &rej, &e, now)?;
                            after.push((name.clone(), Some(e)));
                        }
                        Err(other) => return Err(other),
                    }
                }
                Input::Abort { name, id, reason } => {
                    let source = format!("inbox:{name}");
                    match requests::abort(
                        tx,
                        &id,
                        reason.as_deref(),
                        &crate::core::audit::Actor::Asker,
                        now,
                    ) {
                        Ok(_) => {
                            tracing::info!(id = %id, "request aborted by abort file");
                            out.aborted.push(id.clone());
                            after.push((name.clone(), None));
                        }
                        Err(Error::RequestFinal { .. }) => {
                            tracing::info!(id = %id, "abort file for a final request; nothing to do");
                            after.push((name.clone(), None));
                        }
                        Err(Error::NotFound(_)) => {
                            let e = UserQuestionError::new(
                                Code::NotFound,
                                format!("{name}: no request {id:?} to abort"),
                            );
                            let rej = requests::Rejection {
                                id: None,
                                context: None,
                                body: &format!("abort {id}"),
                                source: &source,
                                actor: Some(crate::core::audit::Actor::Daemon),
                            };
                            requests::record_rejection(tx, &rej, &e, now)?;
                            after.push((name.clone(), Some(e)));
                        }
                        Err(other) => return Err(other),
                    }
                }
                Input::Reject {
                    name,
                    id,
                    context,
                    raw,
                    error,
                } => {
                    let source = format!("inbox:{name}");
                    let rej = requests::Rejection {
                        id: id.as_deref(),
                        context: context.as_deref(),
                        body: &raw,
                        source: &source,
                        actor: Some(crate::core::audit::Actor::Daemon),
                    };
                    requests::record_rejection(tx, &rej, &error, now)?;
                    after.push((name.clone(), Some(error.clone())));
                }
            }
        }
        Ok(())
    })?;
    // Committed: stale error outcomes of reused ids go first, then the files.
    for id in &stale {
        super::outbox::remove_stale(root, id);
    }
    let mut moved_any = false;
    for (name, error) in after {
        let path = dir.join(&name);
        match error {
            None => {
                if let Err(e) = fs::remove_file(&path) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!(file = %name, error = %e, "cannot remove ingested file");
                        out.stuck += 1;
                    }
                }
            }
            Some(e) => {
                tracing::warn!(file = %name, code = %e.code, message = %e.message, "input rejected");
                move_rejected(&dir, &root.rejected(), &name, &e, now)?;
                out.rejected.push((name, e.code));
                moved_any = true;
            }
        }
    }
    if moved_any {
        sync_dir(&root.rejected())?;
    }
    Ok(out)
}

/// Move `src_dir/name` into `rejected_dir` (never overwriting an earlier rejection) beside
/// its error, `STEM.error.json`, which is written first: a crash can leave a reason whose
/// input is still in `src_dir` (rejected again later), never an input without a reason.
pub fn move_rejected(
    src_dir: &Path,
    rejected_dir: &Path,
    name: &str,
    error: &UserQuestionError,
    now: Millis,
) -> Result<()> {
    let base = name.strip_suffix(".json").unwrap_or(name);
    let mut target = name.to_string();
    let mut stem = base.to_string();
    let mut n = 0;
    while fs::symlink_metadata(rejected_dir.join(&target)).is_ok()
        || fs::symlink_metadata(rejected_dir.join(format!("{stem}.error.json"))).is_ok()
    {
        n += 1;
        stem = format!("{base}.{now}-{n}");
        target = if name.ends_with(".json") {
            format!("{stem}.json")
        } else {
            stem.clone()
        };
    }
    let src = src_dir.join(name);
    match fs::symlink_metadata(&src) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(&src, e)),
    }
    // The reason first (durably), then the input: a crash in between leaves the input where
    // it was, to be rejected again (under a fresh name, as this reason file holds the
    // stem), never an input in `rejected_dir` without its reason.
    let error_name = format!("{stem}.error.json");
    let mut doc = serde_json::to_string_pretty(error).expect("errors serialize");
    doc.push('\n');
    write_atomic(rejected_dir, &error_name, doc.as_bytes(), true)?;
    match fs::rename(&src, rejected_dir.join(&target)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Taken meanwhile: no input, so no reason either.
            let _ = fs::remove_file(rejected_dir.join(&error_name));
            Ok(())
        }
        Err(e) => Err(Error::io(&src, e)),
    }
}
