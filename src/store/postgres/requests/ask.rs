//! Accept or reject: the ask checks run against the registry and the leases inside the
//! write transaction; a rejection is kept for the audit. A new row records the store's
//! origin (the root that asked), so that root's daemon writes its outcome file.

use std::cell::RefCell;

use postgres::types::Type;
use postgres::Transaction;

use super::reads::get;
use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind, Source};
use crate::core::lifecycle::Status;
use crate::error::{Error, Result};
use crate::protocol::check::{check_ask, check_structure, AskEnv, CallerStatus};
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::types::{AgentRef, Request};
use crate::store::chain::{hex, NewEvent};
use crate::store::postgres::leases::is_unique_violation;
use crate::store::postgres::tx::Tx;
use crate::store::postgres::{agents, events, leases};
use crate::store::types::Accepted;

struct TxEnv<'a, 'c> {
    tx: RefCell<&'a mut Transaction<'c>>,
    now: Millis,
    lineage: RefCell<Option<String>>,
    failure: RefCell<Option<Error>>,
}

impl AskEnv for TxEnv<'_, '_> {
    fn caller(&self, agent: &AgentRef) -> CallerStatus {
        let mut tx = self.tx.borrow_mut();
        match agents::caller_status(&mut **tx, agent, self.now) {
            Ok((status, lineage)) => {
                *self.lineage.borrow_mut() = lineage;
                status
            }
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                CallerStatus::NotLive {
                    why: "the registry could not be read".into(),
                }
            }
        }
    }

    fn provider_live(&self, context: &str) -> bool {
        let mut tx = self.tx.borrow_mut();
        match leases::live_in(&mut **tx, context, self.now) {
            Ok(live) => live,
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                false
            }
        }
    }
}

// A new row's position (`requests.seq`) is the largest + 1, taken under the write lock,
// as SQLite numbers its rows: an identity would leave a gap for every rolled-back insert,
// and the positions are in the events (`rowSeq`), the feeds and the export, which must
// read the same on both backends. (The identity stays the column's default for tools.)

fn duplicate_id(id: &str) -> Error {
    Error::question(
        Code::DuplicateId,
        format!(
            "request id {id:?} is already used by a request with different content; choose a new id"
        ),
    )
}

/// Check and accept a parsed request (spec §3). A rejection is an `Err(Error::Question)`
/// and writes nothing (call [`record_rejection`] to keep it for the audit).
pub fn accept(
    t: &mut Tx<'_>,
    request: Request,
    fallback_id: Option<&str>,
    source: &str,
    now: Millis,
) -> Result<Accepted> {
    let n = check_structure(request, fallback_id, crate::clock::to_timestamp(now))?;
    let mut existing: Option<(String, String, Status)> = None;
    let mut replaced_rejection = false;
    // The statements of an accept are sent with their parameter types (one round trip
    // each, under the write lock).
    for r in t.tx.query_typed(
        "SELECT status, context, body FROM requests WHERE id = $1",
        &[(&n.id, Type::TEXT)],
    )? {
        let status: String = r.try_get(0)?;
        match Status::parse(&status) {
            Some(Status::Rejected) | None => replaced_rejection = true,
            Some(st) => existing = Some((r.try_get(1)?, r.try_get(2)?, st)),
        }
    }
    if let Some((context, body, status)) = existing {
        let same = serde_json::from_str::<Request>(&body).is_ok_and(|r| r == n.request);
        if same {
            return Ok(Accepted {
                id: n.id,
                context,
                new: false,
                status,
                replaced_rejection: false,
            });
        }
        return Err(duplicate_id(&n.id));
    }
    let env = TxEnv {
        tx: RefCell::new(&mut t.tx),
        now,
        lineage: Default::default(),
        failure: Default::default(),
    };
    let checked = check_ask(&n, crate::clock::to_timestamp(now), &env);
    if let Some(e) = env.failure.into_inner() {
        return Err(e);
    }
    checked?;
    let lineage = env.lineage.into_inner();
    if replaced_rejection {
        t.tx.execute(
            "UPDATE requests SET outbox_pending = FALSE WHERE id = $1 AND status = 'rejected' AND outbox_pending",
            &[&n.id],
        )?;
    }
    let body = n.request.to_json();
    let deadline = n.deadline.map(crate::clock::from_timestamp);
    let agent_id = n.request.agent.as_ref().map(|a| a.id.as_str());
    let agent_instance = n.request.agent.as_ref().map(|a| a.instance.as_str());
    let inserted = t.tx.query_typed_one(
        // The position is the largest + 1, under the write lock (see above).
        "INSERT INTO requests (seq, id, context, status, agent_id, agent_instance, agent_lineage, body, source,
                               require_provider, deadline_ms, created_ms, origin)
         VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM requests),
                 $1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING seq",
        &[
            (&n.id, Type::TEXT),
            (&n.context, Type::TEXT),
            (&agent_id, Type::TEXT),
            (&agent_instance, Type::TEXT),
            (&lineage, Type::TEXT),
            (&body, Type::TEXT),
            (&source, Type::TEXT),
            (&n.request.requires_provider(), Type::BOOL),
            (&deadline, Type::INT8),
            (&now, Type::INT8),
            (&t.origin, Type::TEXT),
        ],
    );
    let seq: i64 = match inserted {
        Ok(r) => r.try_get(0)?,
        // Unreachable under the write lock (the id was looked up above); the index has
        // the last word all the same.
        Err(e) if is_unique_violation(&e, "requests_id") => return Err(duplicate_id(&n.id)),
        Err(e) => return Err(e.into()),
    };
    for (idx, q) in n.request.questions.iter().enumerate() {
        let options = serde_json::to_string(q.options())
            .map_err(|e| Error::Invalid(format!("the options do not serialize: {e}")))?;
        t.tx.execute_typed(
            "INSERT INTO questions (request_seq, idx, qid, question, header, detail, multi_select,
                                    intent_kind, intent_approve, options)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                (&seq, Type::INT8),
                (&(idx as i64), Type::INT8),
                (&q.id, Type::TEXT),
                (&q.question, Type::TEXT),
                (&q.header, Type::TEXT),
                (&q.detail, Type::TEXT),
                (&q.is_multi(), Type::BOOL),
                (&q.intent.as_ref().map(|i| i.kind.as_str()), Type::TEXT),
                (&q.intent.as_ref().map(|i| i.approve.as_str()), Type::TEXT),
                (&options, Type::TEXT),
            ],
        )?;
    }
    let actor = match &n.request.agent {
        Some(a) => Actor::Agent(a.id.clone()),
        None => match Source::parse(source) {
            Some(Source::WebToken(name)) => Actor::Web(name),
            Some(Source::Mcp(name)) => Actor::Mcp(name),
            _ => Actor::Asker,
        },
    };
    events::append(
        t,
        now,
        NewEvent {
            kind: EventKind::Accepted,
            request_id: Some(&n.id),
            agent_id,
            actor: actor.clone(),
            data: serde_json::json!({
                "context": n.context,
                "source": source,
                "questions": n.request.questions.len(),
                "rowSeq": seq,
                "digest": crate::protocol::digest::request_digest(&n.request),
                "deadlineMs": deadline,
                "lineage": lineage,
            }),
            lease_id: None,
        },
    )?;
    Ok(Accepted {
        id: n.id,
        context: n.context,
        new: true,
        status: Status::Pending,
        replaced_rejection,
    })
}

/// What is known of an input that was rejected.
#[derive(Debug, Clone, Default)]
pub struct Rejection<'a> {
    /// The request id, when one could be read (JSON `id`, else the file name).
    pub id: Option<&'a str>,
    /// The context, when it could be read.
    pub context: Option<&'a str>,
    /// The raw input.
    pub body: &'a str,
    /// `cli` or `inbox:FILE`.
    pub source: &'a str,
    /// Who rejected it; `None` means the face that owns `source`.
    pub actor: Option<Actor>,
}

/// Record a rejected input as a `rejected` request for the audit. Returns whether an error
/// outcome will be written to the outbox: only when the id is known and no accepted request
/// owns it. Recording the same input twice is a no-op.
pub fn record_rejection(
    t: &mut Tx<'_>,
    rej: &Rejection<'_>,
    error: &UserQuestionError,
    now: Millis,
) -> Result<bool> {
    let id = rej.id.filter(|i| crate::protocol::check::is_valid_id(i));
    let actor = rej.actor.clone().unwrap_or_else(|| {
        Source::parse(rej.source)
            .map(|s| s.rejecting_actor())
            .unwrap_or(Actor::Daemon)
    });
    let owned = match id {
        Some(i) => get(&mut t.tx, i)?.is_some(),
        None => false,
    };
    let code = error.code.as_str();
    let already =
        t.tx.query_opt(
            "SELECT 1 FROM requests WHERE source = $2 AND id IS NOT DISTINCT FROM $1::text
               AND status = 'rejected' AND body = $3 AND error_code = $4 LIMIT 1",
            &[&id, &rej.source, &rej.body, &code],
        )?
        .is_some();
    if already {
        return Ok(false);
    }
    let outbox = id.is_some() && !owned;
    let context = rej
        .context
        .filter(|c| crate::protocol::check::is_valid_id(c))
        .unwrap_or(crate::protocol::DEFAULT_CONTEXT);
    let seq: i64 = t
        .tx
        .query_one(
            "INSERT INTO requests (seq, id, context, status, body, source, created_ms, finished_ms, error_code, error_message, outbox_pending, origin)
             VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM requests),
                     $1, $2, 'rejected', $3, $4, $5, $5, $6, $7, $8, $9) RETURNING seq",
            &[&id, &context, &rej.body, &rej.source, &now, &code, &error.message, &outbox, &t.origin],
        )?
        .try_get(0)?;
    events::append(
        t,
        now,
        NewEvent {
            kind: EventKind::Rejected,
            request_id: id,
            actor: actor.clone(),
            data: serde_json::json!({
                "source": rej.source,
                "context": context,
                "code": code,
                "message": error.message,
                "rowSeq": seq,
                "bodySha256": hex(&<sha2::Sha256 as sha2::Digest>::digest(rej.body.as_bytes())),
            }),
            lease_id: None,
            agent_id: None,
        },
    )?;
    Ok(outbox)
}

/// The verdict of an earlier rejection of this very input: same id, same source file
/// name, same content, and recorded no earlier than the file's modification time.
pub fn earlier_rejection(
    t: &mut Tx<'_>,
    id: &str,
    source: &str,
    body: &str,
    file_mtime_ms: Millis,
) -> Result<Option<UserQuestionError>> {
    let Some(r) = t.tx.query_opt(
        "SELECT error_code, error_message FROM requests
         WHERE id = $1 AND status = 'rejected' AND source = $2 AND body = $3 AND created_ms >= $4
         ORDER BY seq DESC LIMIT 1",
        &[&id, &source, &body, &file_mtime_ms],
    )?
    else {
        return Ok(None);
    };
    let code: Option<String> = r.try_get(0)?;
    let message: Option<String> = r.try_get(1)?;
    Ok(Some(UserQuestionError::new(
        code.as_deref()
            .and_then(Code::parse)
            .unwrap_or(Code::BadRequest),
        message.unwrap_or_default(),
    )))
}

impl crate::store::driver::RequestStatements for crate::store::postgres::tx::Tx<'_> {}
