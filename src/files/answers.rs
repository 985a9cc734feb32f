//! Answer files: `answers/new/ID.json` holding `{"lease": TOKEN, "answers": [...]}` or
//! `{"lease": TOKEN, "cancel": "reason"}`.
//!
//! They answer or cancel exactly as the CLI does (same store functions, same lease
//! fencing). A bad one moves to `answers/rejected/` beside its error, and the request is
//! untouched. The file is removed only after the commit; processing the same file again
//! after a crash finds the identical answer already recorded and accepts it once.
//!
//! A rejected answer file may hold a live lease token. What lands in `answers/rejected/` is
//! the file with the secret part of every token replaced by `REDACTED` (the lease id is
//! kept for the audit, and everything else as it was), so the directory of failures is
//! never a place to steal a lease from.

use std::fs;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::grace;
use super::inbox::{list_dir, move_rejected, RejectedFile};
use super::safe_read::{read_dropped, ReadError};
use crate::clock::Millis;
use crate::error::Result;
use crate::protocol::check::is_valid_id;
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::{Answer, AnswerItem};
use crate::root::Root;
use crate::store::{ProviderFile, Store};
use crate::text::for_log;

/// The answer file document.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerFile {
    /// The provider's lease token.
    pub lease: String,
    /// The answer (exclusive with `cancel`).
    #[serde(default)]
    pub answers: Option<Vec<AnswerItem>>,
    /// Cancel with this reason (exclusive with `answers`).
    #[serde(default)]
    pub cancel: Option<String>,
}

/// What one pass over `answers/new/` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Processed {
    /// Requests answered.
    pub answered: Vec<String>,
    /// Requests cancelled.
    pub cancelled: Vec<String>,
    /// Files rejected (name, code).
    pub rejected: Vec<(String, Code)>,
}

enum Parsed {
    Answer(String, String, Answer),
    Cancel(String, String, String),
}

fn parse(name: &str, bytes: &[u8]) -> std::result::Result<Parsed, UserQuestionError> {
    let Some(id) = name.strip_suffix(".json") else {
        return Err(UserQuestionError::new(
            Code::BadRequest,
            format!("{name}: answer files are named ID.json"),
        ));
    };
    if !is_valid_id(id) {
        return Err(UserQuestionError::new(
            Code::BadRequest,
            format!("{name}: {id:?} is not a valid request id"),
        ));
    }
    let f: AnswerFile = serde_json::from_slice(bytes).map_err(|e| {
        UserQuestionError::new(
            Code::BadRequest,
            format!("{name}: invalid answer file: {e}"),
        )
    })?;
    match (f.answers, f.cancel) {
        (Some(answers), None) => Ok(Parsed::Answer(id.to_string(), f.lease, Answer { answers })),
        (None, Some(reason)) => Ok(Parsed::Cancel(id.to_string(), f.lease, reason)),
        _ => Err(UserQuestionError::new(
            Code::BadRequest,
            format!("{name}: give exactly one of `answers` and `cancel`"),
        )),
    }
}

/// How many answer files one transaction applies.
pub const BATCH: usize = 256;

/// The shortest run of hex digits after `LEASE_ID.` that is redacted as a secret (a real
/// secret has 64).
const MIN_SECRET_HEX: usize = 32;

/// `bytes` with the secret of every lease token replaced by `REDACTED`, or `None` when
/// there is nothing to redact. A token is `LEASE_ID.SECRET` (digits, a dot, 64 hex
/// digits); the lease id is kept. The text is searched as it is, so a malformed file is
/// redacted too; a JSON document whose `lease` spells its secret with `\u` escapes is
/// written again with that field redacted.
pub fn redact_lease_secrets(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        out.push(b);
        i += 1;
        if b == b'.' && i >= 2 && bytes[i - 2].is_ascii_digit() {
            let run = bytes[i..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            if run >= MIN_SECRET_HEX {
                out.extend_from_slice(b"REDACTED");
                i += run;
                changed = true;
            }
        }
    }
    if let Ok(mut doc) = serde_json::from_slice::<serde_json::Value>(&out) {
        if let Some(lease) = doc.get("lease").and_then(|l| l.as_str()) {
            if let Some((id, secret)) = lease.split_once('.') {
                if secret != "REDACTED" && secret.len() >= MIN_SECRET_HEX {
                    doc["lease"] = serde_json::Value::String(format!("{id}.REDACTED"));
                    let mut v = serde_json::to_vec_pretty(&doc).expect("JSON values serialize");
                    v.push(b'\n');
                    return Some(v);
                }
            }
        }
    }
    changed.then_some(out)
}

/// What to keep in `answers/rejected/` for the rejected answer file `dir/name`: its
/// content with lease secrets redacted, read again now (bounded, never through a link);
/// `None` keeps the file as it is (nothing to redact, or not a readable regular file).
fn redacted_copy(path: &std::path::Path, max_bytes: u64) -> Option<Vec<u8>> {
    read_dropped(path, max_bytes)
        .ok()
        .and_then(|(bytes, _)| redact_lease_secrets(&bytes))
}

/// Process every file in `answers/new/` at `now`: each batch (at most [`BATCH`] files and
/// about `batch_bytes` bytes) in one transaction, each file inside its own savepoint, so a
/// stale lease or a bad answer in one file rolls back only that file and never holds up
/// the others.
pub fn process(
    root: &Root,
    store: &mut Store,
    max_bytes: u64,
    batch_bytes: u64,
    now: Millis,
) -> Result<Processed> {
    let dir = root.answers_new();
    let mut out = Processed::default();
    let names = list_dir(&dir)?;
    let mut rest = &names[..];
    while !rest.is_empty() {
        let (items, taken) = read_batch(&dir, rest, max_bytes, batch_bytes);
        rest = &rest[taken..];
        if items.is_empty() {
            continue;
        }
        // One transaction; each file applies on its own, and replays (a crash between the
        // commit and the file's removal) are recognised by the store and applied once.
        let applied = store.apply_answer_files(&provider_files(&items))?;
        let results = verdicts(&items, applied);
        // Committed: now the files may go.
        let rejected = settle(&dir, &items, results, max_bytes, &mut out);
        move_rejected(&dir, &root.answers_rejected(), &rejected, now);
    }
    Ok(out)
}

/// An answer file of a batch: its name, and what it says or why it is rejected.
type Item = (String, std::result::Result<Parsed, UserQuestionError>);

/// The next batch of `names`: at most [`BATCH`] files, read until about `batch_bytes`
/// bytes; and how many names it took (files still settling or gone are taken and left).
fn read_batch(
    dir: &Path,
    names: &[String],
    max_bytes: u64,
    batch_bytes: u64,
) -> (Vec<Item>, usize) {
    let mut items = Vec::new();
    let (mut taken, mut read) = (0, 0u64);
    for name in names.iter().take(BATCH) {
        if read >= batch_bytes {
            break;
        }
        taken += 1;
        let (parsed, bytes) = read_one(dir, name, max_bytes);
        read += bytes;
        if let Some(parsed) = parsed {
            items.push((name.clone(), parsed));
        }
    }
    (items, taken)
}

/// Read and parse answer file `dir/name`, or `None` to leave it for a later pass: still
/// being written or copied in (judged after the grace), gone, or not readable for a
/// reason that may pass; and the bytes read (a file left to settle counts too).
fn read_one(
    dir: &Path,
    name: &str,
    max_bytes: u64,
) -> (Option<std::result::Result<Parsed, UserQuestionError>>, u64) {
    let path = dir.join(name);
    match read_dropped(&path, max_bytes) {
        Ok((bytes, _)) => {
            let read = bytes.len() as u64;
            if !grace::unfinished(&bytes) {
                return (Some(parse(name, &bytes)), read);
            }
            if grace::settling(&path) {
                return (None, read);
            }
            let parsed = parse(name, &bytes).map_err(|mut e| {
                e.message = format!(
                    "{}; {}",
                    e.message,
                    grace::unfinished_hint(&bytes, "answers")
                );
                e
            });
            (Some(parsed), read)
        }
        Err(ReadError::Gone) => (None, 0),
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            if grace::settling(&path) {
                return (None, 0);
            }
            let e = UserQuestionError::new(
                Code::BadRequest,
                format!("{name}: {}", grace::unreadable_hint(&path, &e, "answers")),
            );
            (Some(Err(e)), 0)
        }
        Err(ReadError::Io(e)) => {
            tracing::warn!(file = %for_log(name), error = %for_log(&e.to_string()), "cannot read answer file; will retry");
            (None, 0)
        }
        Err(e) => {
            let e = UserQuestionError::new(Code::BadRequest, format!("{name}: {e}"));
            (Some(Err(e)), 0)
        }
    }
}

/// The store's calls for the batch's files that parsed, in order.
fn provider_files(items: &[Item]) -> Vec<ProviderFile> {
    items
        .iter()
        .filter_map(|(_, parsed)| match parsed {
            Ok(Parsed::Answer(id, token, answer)) => Some(ProviderFile::Answer {
                id: id.clone(),
                token: token.clone(),
                answer: answer.clone(),
            }),
            Ok(Parsed::Cancel(id, token, reason)) => Some(ProviderFile::Cancel {
                id: id.clone(),
                token: token.clone(),
                reason: (!reason.trim().is_empty()).then(|| reason.clone()),
            }),
            Err(_) => None,
        })
        .collect()
}

/// Per file: `Ok((id, answered?))`, or the error to file it under, from its parse and
/// what the store made of it (`applied`: one result per file that parsed, in order).
fn verdicts(
    items: &[Item],
    applied: Vec<std::result::Result<Option<crate::protocol::Outcome>, crate::error::Error>>,
) -> Vec<std::result::Result<(String, bool), UserQuestionError>> {
    let mut applied = applied.into_iter();
    items
        .iter()
        .map(|(_, parsed)| match parsed {
            Err(e) => Err(e.clone()),
            Ok(p) => {
                let (id, answered) = match p {
                    Parsed::Answer(id, ..) => (id.clone(), true),
                    Parsed::Cancel(id, ..) => (id.clone(), false),
                };
                match applied.next().expect("one result per file") {
                    // A vote on a request with a quorum that left it open.
                    Ok(None) if answered => {
                        tracing::info!(id = %id, "voted by answer file; the request's quorum is not met yet");
                        Ok((id, answered))
                    }
                    Ok(_) => Ok((id, answered)),
                    Err(e) => Err(e.to_user_error()),
                }
            }
        })
        .collect()
}

/// After the commit: remove each applied file and count it in `out`; log and count each
/// rejected one, and return what to keep of it in `answers/rejected/`.
fn settle(
    dir: &Path,
    items: &[Item],
    results: Vec<std::result::Result<(String, bool), UserQuestionError>>,
    max_bytes: u64,
    out: &mut Processed,
) -> Vec<RejectedFile> {
    let mut rejected = Vec::new();
    for ((name, _), result) in items.iter().zip(results) {
        match result {
            Ok((id, answered)) => {
                if answered {
                    tracing::info!(id = %id, "answered by answer file");
                    out.answered.push(id);
                } else {
                    tracing::info!(id = %id, "cancelled by answer file");
                    out.cancelled.push(id);
                }
                if let Err(e) = fs::remove_file(dir.join(name)) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!(file = %for_log(name), error = %for_log(&e.to_string()), "cannot remove answer file");
                    }
                }
            }
            Err(mut ue) => {
                // A message may quote the file (a parse error names a value).
                if let Some(m) = redact_lease_secrets(ue.message.as_bytes()) {
                    ue.message = String::from_utf8_lossy(&m).into_owned();
                }
                tracing::warn!(file = %for_log(name), code = %ue.code, message = %for_log(&ue.message), "answer file rejected");
                out.rejected.push((name.clone(), ue.code));
                rejected.push(RejectedFile {
                    name: name.clone(),
                    keep: redacted_copy(&dir.join(name), max_bytes),
                    error: ue,
                    identity: None,
                });
            }
        }
    }
    rejected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_secrets_are_redacted_and_the_rest_is_kept() {
        let secret = "ab".repeat(32);
        let doc = format!(r#"{{"lease": "17.{secret}", "answers": [oops"#);
        let red = String::from_utf8(redact_lease_secrets(doc.as_bytes()).unwrap()).unwrap();
        assert_eq!(red, r#"{"lease": "17.REDACTED", "answers": [oops"#);
        // Spelled with escapes: the document is written again with the field redacted.
        let escaped = format!(r#"{{"lease": "17.\u0061{}", "cancel": "x"}}"#, &secret[1..]);
        let red = redact_lease_secrets(escaped.as_bytes()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&red).unwrap();
        assert_eq!(v["lease"], "17.REDACTED");
        assert_eq!(v["cancel"], "x");
        assert!(redact_lease_secrets(br#"{"lease": "x", "cancel": "1.5"}"#).is_none());
    }
}
