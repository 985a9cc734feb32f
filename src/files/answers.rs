//! Answer files: `answers/new/ID.json` holding `{"lease": TOKEN, "answers": [...]}` or
//! `{"lease": TOKEN, "cancel": "reason"}`.
//!
//! They answer or cancel exactly as the CLI does (same store functions, same lease
//! fencing). A bad one moves to `answers/rejected/` beside its error, and the request is
//! untouched. The file is removed only after the commit; processing the same file again
//! after a crash finds the identical answer already recorded and accepts it once.

use std::fs;

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Deserialize;

use super::inbox::{list_dir, move_rejected};
use super::safe_read::{read_limited, ReadError};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::protocol::check::is_valid_id;
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::{Answer, AnswerItem};
use crate::root::Root;
use crate::store::{self, requests};

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

/// Process every file in `answers/new/` at `now`: each batch in one transaction, each
/// file inside its own savepoint, so a stale lease or a bad answer in one file rolls back
/// only that file and never holds up the others.
pub fn process(
    root: &Root,
    conn: &mut Connection,
    max_bytes: u64,
    now: Millis,
) -> Result<Processed> {
    let dir = root.answers_new();
    let mut out = Processed::default();
    let names = list_dir(&dir)?;
    for chunk in names.chunks(BATCH) {
        let mut items: Vec<(String, std::result::Result<Parsed, UserQuestionError>)> = Vec::new();
        for name in chunk {
            let parsed = match read_limited(&dir.join(name), max_bytes) {
                Ok(bytes) => parse(name, &bytes),
                Err(ReadError::Gone) => continue,
                Err(ReadError::Io(e)) => {
                    tracing::warn!(file = %name, error = %e, "cannot read answer file; will retry");
                    continue;
                }
                Err(e) => Err(UserQuestionError::new(
                    Code::BadRequest,
                    format!("{name}: {e}"),
                )),
            };
            items.push((name.clone(), parsed));
        }
        if items.is_empty() {
            continue;
        }
        // Per file: Ok((id, answered?)) or the error to file it under.
        let results = store::write_now(conn, |tx, now| {
            let mut results = Vec::with_capacity(items.len());
            for (_, parsed) in &items {
                let parsed = match parsed {
                    Ok(p) => p,
                    Err(e) => {
                        results.push(Err(e.clone()));
                        continue;
                    }
                };
                tx.execute_batch("SAVEPOINT answer_file")?;
                let applied = (|| match parsed {
                    // Replays (a crash between the commit and the file's removal) are
                    // recognised by the store and applied once.
                    Parsed::Answer(id, token, answer) => {
                        requests::answer_replayable(tx, token, id, answer, now)?;
                        Ok((id.clone(), true))
                    }
                    Parsed::Cancel(id, token, reason) => {
                        let reason = (!reason.trim().is_empty()).then_some(reason.as_str());
                        requests::cancel_replayable(tx, token, id, reason, now)?;
                        Ok((id.clone(), false))
                    }
                })();
                match applied {
                    Ok(done) => {
                        tx.execute_batch("RELEASE answer_file")?;
                        results.push(Ok(done));
                    }
                    Err(
                        e @ (Error::Db(_)
                        | Error::Io { .. }
                        | Error::Pragma { .. }
                        | Error::SchemaTooNew { .. }),
                    ) => return Err(e),
                    Err(e) => {
                        tx.execute_batch("ROLLBACK TO answer_file; RELEASE answer_file")?;
                        results.push(Err(e.to_user_error()));
                    }
                }
            }
            Ok(results)
        })?;
        // Committed: now the files may go.
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
                            tracing::warn!(file = %name, error = %e, "cannot remove answer file");
                        }
                    }
                }
                Err(ue) => {
                    tracing::warn!(file = %name, code = %ue.code, message = %ue.message, "answer file rejected");
                    move_rejected(&dir, &root.answers_rejected(), name, &ue, now)?;
                    out.rejected.push((name.clone(), ue.code));
                }
            }
        }
    }
    Ok(out)
}
