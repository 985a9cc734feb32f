//! Accept or reject: the ask checks run against the registry and the leases inside the
//! transaction; a rejection is kept for the audit.

use rusqlite::{params, OptionalExtension, Transaction};

use super::reads::get;
use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind, Source};
use crate::core::lifecycle::Status;
use crate::error::{Error, Result};
use crate::protocol::check::{check_ask, check_structure, AskEnv, CallerStatus};
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::types::{AgentRef, Request};
use crate::store::sqlite::agents;
use crate::store::sqlite::events::{self, NewEvent};
use crate::store::sqlite::leases::{self};
use crate::store::types::Accepted;

struct TxEnv<'a> {
    tx: &'a Transaction<'a>,
    now: Millis,
    lineage: std::cell::RefCell<Option<String>>,
    failure: std::cell::RefCell<Option<Error>>,
}

impl AskEnv for TxEnv<'_> {
    fn caller(&self, agent: &AgentRef) -> CallerStatus {
        match agents::caller_status(self.tx, agent, self.now) {
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
        match leases::live_in(self.tx, context, self.now) {
            Ok(live) => live,
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                false
            }
        }
    }
}

/// Check and accept a parsed request (spec §3). `fallback_id` is the file name for inbox
/// files; `source` is recorded. A rejection is an `Err(Error::Question)` and writes nothing
/// (call [`record_rejection`] to keep it for the audit).
pub fn accept(
    tx: &Transaction,
    request: Request,
    fallback_id: Option<&str>,
    source: &str,
    now: Millis,
) -> Result<Accepted> {
    let n = check_structure(request, fallback_id, crate::clock::to_timestamp(now))?;
    // Re-delivery of the same request is accepted once; other content under the same id is not.
    // One index lookup finds both the accepted request owning the id (if any) and whether
    // an earlier input with this id was rejected.
    let mut existing: Option<(String, String, Status)> = None;
    let mut replaced_rejection = false;
    {
        let mut stmt = tx.prepare_cached(
            "SELECT status, context, body FROM requests INDEXED BY requests_id WHERE id = ?1",
        )?;
        let mut rows = stmt.query([&n.id])?;
        while let Some(r) = rows.next()? {
            let status: String = r.get(0)?;
            match Status::parse(&status) {
                Some(Status::Rejected) | None => replaced_rejection = true,
                Some(st) => existing = Some((r.get(1)?, r.get(2)?, st)),
            }
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
        return Err(Error::question(
            Code::DuplicateId,
            format!(
                "request id {:?} is already used by a request with different content; choose a new id",
                n.id
            ),
        ));
    }
    let env = TxEnv {
        tx,
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
        // An earlier rejection of this id must not publish its error outcome over this
        // request's (the file, if already written, is removed after the commit).
        tx.prepare_cached(
            "UPDATE requests SET outbox_pending = 0 WHERE id = ?1 AND status = 'rejected' AND outbox_pending = 1",
        )?
        .execute([&n.id])?;
    }
    let body = n.request.to_json();
    let deadline = n.deadline.map(crate::clock::from_timestamp);
    tx.prepare_cached(
        "INSERT INTO requests (id, context, status, agent_id, agent_instance, agent_lineage, body, source,
                               require_provider, deadline_ms, created_ms)
         VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        n.id,
        n.context,
        n.request.agent.as_ref().map(|a| &a.id),
        n.request.agent.as_ref().map(|a| &a.instance),
        lineage,
        body,
        source,
        n.request.requires_provider(),
        deadline,
        now
    ])?;
    let seq = tx.last_insert_rowid();
    {
        let mut q_stmt = tx.prepare_cached(
            "INSERT INTO questions (request_seq, idx, qid, question, header, detail, multi_select,
                                    intent_kind, intent_approve, options)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        for (idx, q) in n.request.questions.iter().enumerate() {
            q_stmt.execute(params![
                seq,
                idx as i64,
                q.id,
                q.question,
                q.header,
                q.detail,
                q.is_multi(),
                q.intent.as_ref().map(|i| &i.kind),
                q.intent.as_ref().map(|i| &i.approve),
                serde_json::to_string(q.options()).expect("options serialize"),
            ])?;
        }
    }
    let actor = match &n.request.agent {
        Some(a) => Actor::Agent(a.id.clone()),
        // A web token that asks is named in the log (`web:NAME`), as it is for what else
        // it does.
        None => match crate::core::audit::Source::parse(source) {
            Some(crate::core::audit::Source::WebToken(name)) => Actor::Web(name),
            // So is an MCP client over stdio (`mcp:CLIENT`).
            Some(crate::core::audit::Source::Mcp(name)) => Actor::Mcp(name),
            _ => Actor::Asker,
        },
    };
    events::append(
        tx,
        now,
        NewEvent {
            kind: EventKind::Accepted,
            request_id: Some(&n.id),
            agent_id: n.request.agent.as_ref().map(|a| a.id.as_str()),
            actor: actor.clone(),
            // What was asked: the digest of the canonical request (the row's body must
            // hash to it) and what the row keeps beside the body.
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
    /// The raw input (lossy UTF-8, possibly truncated by the caller).
    pub body: &'a str,
    /// `cli` or `inbox:FILE`.
    pub source: &'a str,
    /// Who rejected it; `None` means the face that owns `source`
    /// ([`crate::core::audit::Source::rejecting_actor`]: the CLI for `cli`, the daemon for
    /// an inbox file).
    pub actor: Option<Actor>,
}

/// Record a rejected input as a `rejected` request for the audit. Returns whether an error
/// outcome will be written to the outbox: only when the id is known and no accepted request
/// owns it. Recording the same input twice (a crash between commit and moving the file) is
/// a no-op.
pub fn record_rejection(
    tx: &Transaction,
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
        Some(i) => get(tx, i)?.is_some(),
        None => false,
    };
    let code = error.code.as_str();
    let already: bool = tx
        .prepare_cached(
            // By source (the file): left to itself the planner walks every rejected row
            // (the status index), and the id index walks every id-less one; either made
            // each rejection in a flood slower than the last.
            "SELECT 1 FROM requests INDEXED BY requests_rejected_source WHERE source = ?2 AND id IS ?1 AND status = 'rejected' AND body = ?3 AND error_code = ?4",
        )?
        .exists(params![id, rej.source, rej.body, code])?;
    if already {
        return Ok(false);
    }
    let outbox = id.is_some() && !owned;
    let context = rej
        .context
        .filter(|c| crate::protocol::check::is_valid_id(c))
        .unwrap_or(crate::protocol::DEFAULT_CONTEXT);
    tx.prepare_cached(
        "INSERT INTO requests (id, context, status, body, source, created_ms, finished_ms, error_code, error_message, outbox_pending)
         VALUES (?1, ?2, 'rejected', ?3, ?4, ?5, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![id, context, rej.body, rej.source, now, code, error.message, outbox])?;
    events::append(
        tx,
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
                "rowSeq": tx.last_insert_rowid(),
                "bodySha256": events::hex(&<sha2::Sha256 as sha2::Digest>::digest(rej.body.as_bytes())),
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
    tx: &Transaction,
    id: &str,
    source: &str,
    body: &str,
    file_mtime_ms: Millis,
) -> Result<Option<UserQuestionError>> {
    Ok(tx
        .prepare_cached(
            // The index's second key is the seq of a rejection (0 for an accepted request),
            // so "newest rejection first" reads the index in order instead of sorting.
            "SELECT error_code, error_message FROM requests INDEXED BY requests_id
             WHERE id = ?1 AND status = 'rejected' AND (CASE WHEN status = 'rejected' THEN seq ELSE 0 END) > 0
               AND source = ?2 AND body = ?3 AND created_ms >= ?4
             ORDER BY (CASE WHEN status = 'rejected' THEN seq ELSE 0 END) DESC LIMIT 1",
        )?
        .query_row(params![id, source, body, file_mtime_ms], |r| {
            Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .optional()?
        .map(|(code, message)| {
            UserQuestionError::new(
                code.as_deref().and_then(Code::parse).unwrap_or(Code::BadRequest),
                message.unwrap_or_default(),
            )
        }))
}

impl crate::store::driver::RequestStatements for crate::store::sqlite::sql::Sql<'_, '_> {}
