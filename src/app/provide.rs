//! Providing: claim, answer, cancel, with a registered lease or a transient one (a
//! one-shot command registers a lease in the request's context and releases it in the
//! same transaction). An outcome is published after its commit.

use std::time::Duration;

use super::{publish, Finished};
use crate::error::Result;
use crate::protocol::Answer;
use crate::root::Root;
use crate::store::{Answered, LeaseRef, RequestRow, Store, Voted};

/// How long a transient lease (taken for one command) lives at most.
pub const TRANSIENT_TTL: Duration = Duration::from_secs(60);

/// Who acts.
#[derive(Debug, Clone)]
pub enum Acting {
    /// The holder of a registered lease.
    Lease(String),
    /// A one-shot provider by name, on a transient lease.
    Transient {
        /// The provider's name (recorded as who answered).
        name: String,
    },
    /// A reviewer voting as themselves on a request with a quorum: a vote takes no lease.
    Voter(crate::core::audit::Actor),
    /// Someone acting through a lease the host holds (a reviewer on the web page or the
    /// HTTP API): recorded as `actor`, not as the lease's holder.
    OnBehalf {
        /// The host's lease token.
        token: String,
        /// Who acts (`web:NAME`).
        actor: crate::core::audit::Actor,
    },
}

impl Acting {
    /// The lease this act is made through, as the store takes it.
    pub fn lease_ref(&self) -> LeaseRef {
        match self {
            Acting::Lease(token) => LeaseRef::Token(token.clone()),
            Acting::Transient { name } => LeaseRef::Transient {
                name: name.clone(),
                ttl_ms: TRANSIENT_TTL.as_millis() as i64,
            },
            Acting::OnBehalf { token, actor } => LeaseRef::OnBehalf {
                token: token.clone(),
                actor: actor.clone(),
            },
            Acting::Voter(actor) => LeaseRef::Voter(actor.clone()),
        }
    }
}

/// What an answer did: finished the request, or (on a request with a quorum) recorded a
/// vote that left it open.
#[derive(Debug, Clone, PartialEq)]
pub enum Answering {
    /// The request is answered (or was vetoed): its outcome (boxed: an outcome is much
    /// larger than a vote).
    Finished(Box<Finished>),
    /// The vote was recorded; the quorum is not met yet.
    Voted(Voted),
}

impl Answering {
    /// The outcome, when the answer finished the request.
    pub fn finished(&self) -> Option<&Finished> {
        match self {
            Answering::Finished(f) => Some(f),
            Answering::Voted(_) => None,
        }
    }
}

/// Claim `id` as `who` (idempotent for the lease's own claims).
pub fn claim_as(store: &mut Store, who: &Acting, id: &str) -> Result<RequestRow> {
    store.claim(&who.lease_ref(), id)
}

/// Claim `id` with the lease `token` (idempotent for its own claims).
pub fn claim(store: &mut Store, token: &str, id: &str) -> Result<RequestRow> {
    store.claim(&LeaseRef::Token(token.to_string()), id)
}

/// Claim the oldest pending request of the lease's context.
pub fn claim_next(store: &mut Store, token: &str) -> Result<RequestRow> {
    store.claim_next(&LeaseRef::Token(token.to_string()))
}

/// What the store's answer did, with a finished request's outcome published (when `root`
/// is given): what every face's answer returns.
pub(super) fn published(store: &mut Store, root: Option<&Root>, done: Answered) -> Answering {
    match done {
        Answered::Finished(outcome) => Answering::Finished(Box::new(publish(store, root, outcome))),
        Answered::Voted(v) => Answering::Voted(*v),
    }
}

/// Answer `id`, then publish the outcome (when `root` is given). On a request with a
/// quorum the answer is `who`'s vote, and it may leave the request open.
pub fn answer(
    store: &mut Store,
    root: Option<&Root>,
    id: &str,
    who: &Acting,
    answer: &Answer,
) -> Result<Answering> {
    answer_for(store, root, id, who, answer, None)
}

/// [`answer`], made for the away person `for_person` by their delegate (`who`) when given:
/// recorded as "D for P" ([`crate::core::delegation`]).
pub fn answer_for(
    store: &mut Store,
    root: Option<&Root>,
    id: &str,
    who: &Acting,
    answer: &Answer,
    for_person: Option<&str>,
) -> Result<Answering> {
    let done = store.answer_for(&who.lease_ref(), id, answer, for_person)?;
    Ok(published(store, root, done))
}

/// Cancel `id` (`ASK_CANCELLED`), then publish the outcome (when `root` is given).
pub fn cancel(
    store: &mut Store,
    root: Option<&Root>,
    id: &str,
    who: &Acting,
    reason: Option<&str>,
) -> Result<Finished> {
    let outcome = store.cancel(&who.lease_ref(), id, reason)?;
    Ok(publish(store, root, outcome))
}

/// Apply the answer and cancel files waiting in `answers/new/` (the daemon's file loop):
/// each batch in one store transaction, each file on its own; then the outcomes are
/// published by the caller's pass.
pub fn answer_files(
    store: &mut Store,
    root: &Root,
    max_bytes: u64,
    batch_bytes: u64,
) -> Result<crate::files::answers::Processed> {
    crate::files::answers::process(root, store, max_bytes, batch_bytes, crate::clock::now_ms())
}
