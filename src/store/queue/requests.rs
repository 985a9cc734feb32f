//! The queue rules of one concern, over [`crate::store::driver`]: see [`super`].
//!
//! Asking: a request is checked (the protocol's pure checks, against an environment whose
//! queries are statements) and accepted, or its rejection is kept for the audit (and, when
//! its id is known and free, published as an error outcome); an inbox batch runs that per
//! file; the sweep aborts open requests past their deadline; the outbox's written outcomes
//! are unflagged.

use std::cell::RefCell;

use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind, Source};
use crate::core::lifecycle::Status;
use crate::core::quorum::{Policy, Required};
use crate::error::{Error, Result};
use crate::protocol::check::{
    check_ask, check_structure, is_valid_id, AskEnv, CallerStatus, Normalized,
};
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::prepared::Prepared;
use crate::protocol::types::{AgentRef, Request};
use crate::store::calls::{AskInput, Asked, InboxInput, InboxVerdict};
use crate::store::chain::{hex, NewEvent};
use crate::store::driver::requests::{NewQuestion, NewRejection, NewRequest};
use crate::store::driver::Statements;
use crate::store::queue::{agents, answers, leases};
use crate::store::types::Accepted;

/// The ask checks' view of the world, read through the transaction's statements. A
/// failed read is kept (and returned by [`accept`]) rather than judged on.
struct Env<'a, 'b> {
    db: RefCell<&'a mut (dyn Statements + 'b)>,
    now: Millis,
    lineage: RefCell<Option<String>>,
    failure: RefCell<Option<Error>>,
}

impl AskEnv for Env<'_, '_> {
    fn caller(&self, agent: &AgentRef) -> CallerStatus {
        match agents::caller_status(&mut **self.db.borrow_mut(), self.now, agent) {
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
        match leases::live_in(&mut **self.db.borrow_mut(), context, self.now) {
            Ok(live) => live,
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                false
            }
        }
    }
}

fn duplicate_id(id: &str) -> Error {
    Error::question(
        Code::DuplicateId,
        format!(
            "request id {id:?} is already used by a request with different content; choose a new id"
        ),
    )
}

fn duplicate_wait(id: &str, call_id: &str) -> Error {
    Error::question(
        Code::DuplicateWait,
        format!(
            "tool call {:?} already has a request ({id}) with other content: one call, one question; collect that one's answer, or ask on a new call",
            crate::text::one_line(call_id)
        ),
    )
}

/// Check and accept a parsed request (spec §3). `fallback_id` is the file name for inbox
/// files; `source` is recorded. A rejection is an `Err(Error::Question)` and writes nothing
/// (call [`record_rejection`] to keep it for the audit).
pub fn accept(
    db: &mut dyn Statements,
    now: Millis,
    request: Request,
    fallback_id: Option<&str>,
    source: &str,
    policy: &Policy,
) -> Result<Accepted> {
    accept_prepared(db, now, request, None, fallback_id, source, policy)
}

/// [`accept`], with the request's stored forms made ahead ([`Prepared`], the daemon's file
/// thread): used when they were prepared under the id the checks give the request, else
/// made here.
pub fn accept_prepared(
    db: &mut dyn Statements,
    now: Millis,
    request: Request,
    prepared: Option<Prepared>,
    fallback_id: Option<&str>,
    source: &str,
    policy: &Policy,
) -> Result<Accepted> {
    let mut n = check_structure(request, fallback_id, crate::clock::to_timestamp(now))?;
    let replaced_rejection = match earlier_under_id(db, &n)? {
        Earlier::Same(accepted) => return Ok(accepted),
        Earlier::None { replaced_rejection } => replaced_rejection,
    };
    let lineage = check_in_place(db, now, &n)?;
    // The quorum it is held to, fixed now (the context's policy wins over the asker's).
    let required = policy
        .required(&n.context, n.request.quorum.as_deref())
        .map_err(|e| Error::question(Code::BadRequest, e.to_string()))?;
    apply_context_ladder(db, now, &mut n)?;
    if replaced_rejection {
        // An earlier rejection of this id must not publish its error outcome over this
        // request's (the file, if already written, is removed after the commit).
        db.unset_outbox_of_rejections_of_id(&n.id)?;
    }
    let Some(prepared) = prepared
        .filter(|p| p.id == n.id)
        .or_else(|| Prepared::of_named(&n.request))
    else {
        return Err(Error::Invalid("the request does not serialize".to_string()));
    };
    let quorum_json = required.as_ref().map(Required::to_json);
    let seq = insert_rows(
        db,
        now,
        &n,
        &prepared,
        source,
        lineage.as_deref(),
        quorum_json.as_deref(),
    )?;
    let data = accepted_data(
        &n,
        source,
        seq,
        &prepared.digest,
        lineage,
        required.as_ref(),
    )?;
    db.append_event(
        now,
        NewEvent {
            kind: EventKind::Accepted,
            request_id: Some(&n.id),
            agent_id: n.request.agent.as_ref().map(|a| a.id.as_str()),
            actor: asker(&n.request, source),
            data,
            lease_id: None,
        },
    )?;
    super::deliveries::notify(
        db,
        now,
        EventKind::Accepted,
        &n.id,
        &n.context,
        || serde_json::json!({ "questions": questions_text(&n.request) }),
    )?;
    Ok(Accepted {
        id: n.id,
        context: n.context,
        new: true,
        status: Status::Pending,
        replaced_rejection,
    })
}

/// What the store already holds under a request's id.
enum Earlier {
    /// The same request, accepted before: its re-delivery is that acceptance.
    Same(Accepted),
    /// No accepted request; whether an earlier input with this id was rejected.
    None { replaced_rejection: bool },
}

/// Re-delivery of the same request is accepted once; other content under the same id is
/// not (`DUPLICATE_ID`, or `DUPLICATE_WAIT` for a tool call's request). One lookup finds
/// both the accepted request owning the id (if any) and whether an earlier input with
/// this id was rejected.
fn earlier_under_id(db: &mut dyn Statements, n: &Normalized) -> Result<Earlier> {
    let mut existing: Option<(String, String, Status)> = None;
    let mut replaced_rejection = false;
    for r in db.rows_with_id(&n.id)? {
        match Status::parse(&r.status) {
            Some(Status::Rejected) | None => replaced_rejection = true,
            Some(st) => existing = Some((r.context, r.body, st)),
        }
    }
    let Some((context, body, status)) = existing else {
        return Ok(Earlier::None { replaced_rejection });
    };
    if serde_json::from_str::<Request>(&body).is_ok_and(|r| r == n.request) {
        return Ok(Earlier::Same(Accepted {
            id: n.id.clone(),
            context,
            new: false,
            status,
            replaced_rejection: false,
        }));
    }
    Err(match &n.request.wait {
        Some(w) => duplicate_wait(&n.id, &w.call_id),
        None => duplicate_id(&n.id),
    })
}

/// The ask checks that read the store (the caller's registration, a live provider where
/// one is required), through the transaction's statements: the caller's lineage, or the
/// rejection (a failed read is returned as itself, not judged on).
fn check_in_place(db: &mut dyn Statements, now: Millis, n: &Normalized) -> Result<Option<String>> {
    let env = Env {
        db: RefCell::new(db),
        now,
        lineage: Default::default(),
        failure: Default::default(),
    };
    let checked = check_ask(n, crate::clock::to_timestamp(now), &env);
    if let Some(e) = env.failure.into_inner() {
        return Err(e);
    }
    checked?;
    Ok(env.lineage.into_inner())
}

/// The operator's ladder policy of the request's context, resolved under the asker's own
/// ladder; a policy that does not parse is logged and ignored.
fn apply_context_ladder(db: &mut dyn Statements, now: Millis, n: &mut Normalized) -> Result<()> {
    let Some(policy) = db.context_ladder_policy(&n.context)? else {
        return Ok(());
    };
    match serde_json::from_str::<crate::protocol::ladder::Ladder>(&policy) {
        Ok(p) => {
            n.ladder = crate::protocol::ladder::resolve_with_policy(
                n.request.ladder.as_deref(),
                &p,
                &n.request.questions,
                &n.context,
                n.deadline,
                crate::clock::to_timestamp(now),
            )?;
        }
        Err(e) => {
            tracing::warn!(context = %n.context, error = %e, "a context's ladder policy does not parse; ignored")
        }
    }
    Ok(())
}

/// Insert the accepted request's row (pending) and its question rows: the row's `seq`.
fn insert_rows(
    db: &mut dyn Statements,
    now: Millis,
    n: &Normalized,
    prepared: &Prepared,
    source: &str,
    lineage: Option<&str>,
    quorum: Option<&str>,
) -> Result<i64> {
    let ladder = n.ladder.as_ref().map(|l| l.to_json());
    let seq = db
        .insert_pending_request(&NewRequest {
            id: &n.id,
            context: &n.context,
            agent_id: n.request.agent.as_ref().map(|a| a.id.as_str()),
            agent_instance: n.request.agent.as_ref().map(|a| a.instance.as_str()),
            agent_lineage: lineage,
            body: &prepared.body,
            source,
            require_provider: n.request.requires_provider(),
            deadline_ms: n.deadline.map(crate::clock::from_timestamp),
            created_ms: now,
            ladder: ladder.as_deref(),
            ladder_due_ms: n.ladder.as_ref().and_then(|l| l.next(0)).map(|(_, t)| t),
            quorum,
        })?
        // Unreachable under the write lock (the id was looked up above); the index has
        // the last word all the same.
        .ok_or_else(|| duplicate_id(&n.id))?;
    for ((idx, q), options) in n
        .request
        .questions
        .iter()
        .enumerate()
        .zip(&prepared.options)
    {
        db.insert_question(&NewQuestion {
            request_seq: seq,
            idx: idx as i64,
            qid: &q.id,
            question: &q.question,
            header: q.header.as_deref(),
            detail: q.detail.as_deref(),
            multi_select: q.is_multi(),
            intent_kind: q.intent.as_ref().map(|i| i.kind.as_str()),
            intent_approve: q.intent.as_ref().map(|i| i.approve.as_str()),
            options,
        })?;
    }
    Ok(seq)
}

/// Who asked, as the log names them: the agent; else a web token that asks (`web:NAME`),
/// as it is for what else it does, or an MCP client over stdio (`mcp:CLIENT`); else the
/// asker.
fn asker(request: &Request, source: &str) -> Actor {
    match &request.agent {
        Some(a) => Actor::Agent(a.id.clone()),
        None => match Source::parse(source) {
            Some(Source::WebToken(name)) => Actor::Web(name),
            Some(Source::Mcp(name)) => Actor::Mcp(name),
            _ => Actor::Asker,
        },
    }
}

/// The `accepted` event's data: what was asked (the digest of the canonical request: the
/// row's body must hash to it) and what the row keeps beside the body.
fn accepted_data(
    n: &Normalized,
    source: &str,
    seq: i64,
    digest: &str,
    lineage: Option<String>,
    required: Option<&Required>,
) -> Result<serde_json::Value> {
    let mut data = serde_json::json!({
        "context": n.context,
        "source": source,
        "questions": n.request.questions.len(),
        "rowSeq": seq,
        "digest": digest,
        "deadlineMs": n.deadline.map(crate::clock::from_timestamp),
        "lineage": lineage,
    });
    // The resolved ladder, only on a request that has one: the row's `ladder`
    // column must be this.
    if let (Some(l), Some(map)) = (&n.ladder, data.as_object_mut()) {
        let v = serde_json::to_value(l)
            .map_err(|e| Error::Invalid(format!("the ladder does not serialize: {e}")))?;
        map.insert("ladder".into(), v);
    }
    // The quorum the row holds (only when there is one: a request without one
    // is recorded exactly as before).
    if let Some(q) = required {
        data["quorum"] = serde_json::to_value(q)
            .map_err(|e| Error::Invalid(format!("the quorum does not serialize: {e}")))?;
    }
    Ok(data)
}

/// The questions' texts, for a delivery's body (the receiver shows them: untrusted text).
pub fn questions_text(r: &Request) -> Vec<&str> {
    r.questions.iter().map(|q| q.question.as_str()).collect()
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
    db: &mut dyn Statements,
    now: Millis,
    rej: &Rejection<'_>,
    error: &UserQuestionError,
) -> Result<bool> {
    let id = rej.id.filter(|i| is_valid_id(i));
    let actor = rej.actor.clone().unwrap_or_else(|| {
        Source::parse(rej.source)
            .map(|s| s.rejecting_actor())
            .unwrap_or(Actor::Daemon)
    });
    let owned = match id {
        Some(i) => db.accepted_request_exists(i)?,
        None => false,
    };
    let code = error.code.as_str();
    if db.rejection_exists(id, rej.source, rej.body, code)? {
        return Ok(false);
    }
    let outbox = id.is_some() && !owned;
    let context = rej
        .context
        .filter(|c| is_valid_id(c))
        .unwrap_or(crate::protocol::DEFAULT_CONTEXT);
    let seq = db.insert_rejected_request(&NewRejection {
        id,
        context,
        body: rej.body,
        source: rej.source,
        now,
        error_code: code,
        error_message: &error.message,
        outbox_pending: outbox,
    })?;
    db.append_event(
        now,
        NewEvent {
            kind: EventKind::Rejected,
            request_id: id,
            actor,
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
    db: &mut dyn Statements,
    id: &str,
    source: &str,
    body: &str,
    file_mtime_ms: Millis,
) -> Result<Option<UserQuestionError>> {
    Ok(db
        .newest_rejection_since(id, source, body, file_mtime_ms)?
        .map(|(code, message)| {
            UserQuestionError::new(
                code.as_deref()
                    .and_then(Code::parse)
                    .unwrap_or(Code::BadRequest),
                message.unwrap_or_default(),
            )
        }))
}

/// Accept a request, or record its rejection with the input's actor (one step of a
/// transaction: `ask` is one, an inbox batch runs it per request file).
pub fn accept_or_reject(
    db: &mut dyn Statements,
    now: Millis,
    input: AskInput,
    policy: &Policy,
) -> Result<Asked> {
    accept_or_reject_prepared(db, now, input, None, policy)
}

/// [`accept_or_reject`] with the request's stored forms made ahead ([`accept_prepared`]).
pub fn accept_or_reject_prepared(
    db: &mut dyn Statements,
    now: Millis,
    input: AskInput,
    prepared: Option<Prepared>,
    policy: &Policy,
) -> Result<Asked> {
    db.lock_row_numbers()?;
    let source = input.source.as_str();
    let refused = match input.request {
        Ok(request) => match accept_prepared(
            db,
            now,
            request,
            prepared,
            input.fallback_id.as_deref(),
            &source,
            policy,
        ) {
            Ok(a) => return Ok(Asked::Accepted(a)),
            Err(Error::Question(e)) => e,
            Err(other) => return Err(other),
        },
        Err(e) => e,
    };
    let (id, context) = &input.salvaged;
    let rej = Rejection {
        id: id.as_deref(),
        context: context.as_deref(),
        body: &input.raw,
        source: &source,
        actor: Some(input.actor.clone()),
    };
    let outcome = record_rejection(db, now, &rej, &refused)?;
    Ok(Asked::Rejected {
        error: refused,
        outcome,
    })
}

/// An inbox batch, in one transaction: each input's verdict, in order.
pub fn ingest(
    db: &mut dyn Statements,
    now: Millis,
    inputs: Vec<InboxInput>,
    policy: &Policy,
) -> Result<Vec<InboxVerdict>> {
    db.lock_row_numbers()?;
    // The ids each input will look up (the request's own, else its file's stem), at once.
    let ids: Vec<String> = inputs
        .iter()
        .filter_map(|i| match i {
            InboxInput::Request { request, stem, .. } => {
                Some(crate::protocol::continued::own_id(request).unwrap_or_else(|| stem.clone()))
            }
            _ => None,
        })
        .collect();
    if !ids.is_empty() {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        db.preload_rows_of_ids(&ids)?;
    }
    let mut out = Vec::with_capacity(inputs.len());
    for input in inputs {
        out.push(ingest_one(db, now, input, policy)?);
    }
    Ok(out)
}

/// One inbox input, inside the batch's transaction.
pub fn ingest_one(
    db: &mut dyn Statements,
    now: Millis,
    input: InboxInput,
    policy: &Policy,
) -> Result<InboxVerdict> {
    Ok(match input {
        InboxInput::Request {
            name,
            stem,
            request,
            raw,
            mtime,
            prepared,
        } => {
            let from = Source::Inbox(name);
            let source = from.as_str().into_owned();
            // This very file was judged already (committed as rejected, then the daemon
            // died or the move failed): finish with that verdict instead of judging it
            // again, which could now flip it to accepted. A file dropped again is newer
            // than the rejection and is judged anew.
            let id = request.id.clone().unwrap_or_else(|| stem.clone());
            if let Some(e) = earlier_rejection(db, &id, &source, &raw, mtime)? {
                return Ok(InboxVerdict::Rejected(e));
            }
            // The same accept-or-reject as `ask`, by the daemon; a rejection is recorded
            // under the request's id, else the file's.
            let salvaged = (Some(id), request.context.clone());
            let input = AskInput {
                request: Ok(request),
                fallback_id: Some(stem),
                salvaged,
                raw,
                source: from,
                actor: Actor::Daemon,
            };
            accept_or_reject_prepared(db, now, input, prepared.map(|p| *p), policy)?.into()
        }
        InboxInput::Abort { name, id, reason } => {
            let source = Source::Inbox(name.clone()).as_str().into_owned();
            match answers::abort(db, now, &id, reason.as_deref(), &Actor::Asker) {
                Ok(_) => InboxVerdict::Aborted(id),
                Err(Error::RequestFinal { .. }) => InboxVerdict::AbortIgnored(id),
                Err(Error::NotFound(_)) => {
                    let e = UserQuestionError::new(
                        Code::NotFound,
                        format!("{name}: no request {id:?} to abort"),
                    );
                    let rej = Rejection {
                        id: None,
                        context: None,
                        body: &format!("abort {id}"),
                        source: &source,
                        actor: Some(Actor::Daemon),
                    };
                    record_rejection(db, now, &rej, &e)?;
                    InboxVerdict::Rejected(e)
                }
                Err(other) => return Err(other),
            }
        }
        InboxInput::Reject {
            name,
            id,
            context,
            raw,
            error,
        } => {
            let source = Source::Inbox(name).as_str().into_owned();
            let rej = Rejection {
                id: id.as_deref(),
                context: context.as_deref(),
                body: &raw,
                source: &source,
                actor: Some(Actor::Daemon),
            };
            record_rejection(db, now, &rej, &error)?;
            InboxVerdict::Rejected(error)
        }
    })
}
