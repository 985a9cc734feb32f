//! The queue rules of answering, over [`crate::store::driver::AnswerStatements`]: see
//! [`super`].
//!
//! Provider transitions (claim, answer, cancel) and the asker's abort, with the replay
//! rules of answer files: every transition names the states it leaves and the lease that
//! may make it, so a final state never changes and of two racing answers one wins.
//!
//! An answer may approve a question's proposal as the reviewer edited it
//! ([`crate::protocol::edit`]): [`answer`] checks the edit with the answer rules, keeps
//! each edit (proposal, approved text, diff) on the row and records the same in the
//! `answered` event, in the one transaction of the answer.
//!
//! The lease a transition is made by is resolved by the caller (the store's `lease_for`);
//! answer files resolve their token with [`super::leases`].

use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::core::lifecycle::{RequestRow, Status};
use crate::core::people::People;
use crate::core::quorum::{QuorumView, Refusal, Required, Verdict, Vote};
use crate::error::{Error, Result};
use crate::protocol::answer::{check_answer, in_question_order, request_decision};
use crate::protocol::edit;
use crate::protocol::error::Code;
use crate::protocol::types::{Answer, Decision, Outcome};
use crate::store::calls::LeaseRef;
use crate::store::calls::{Answered, ProviderFile};
use crate::store::chain::NewEvent;
use crate::store::driver::answers::{AnsweredQuestion, AnsweredRow, ErrorEnd, Fence, NewVote};
use crate::store::driver::sign_in::SignInGroup;
use crate::store::driver::{AnswerReads, Statements};
use crate::store::queue::leases;
use crate::store::types::Lease;
use crate::store::types::Voted;

fn changed(id: &str) -> Error {
    Error::RequestFinal {
        id: id.into(),
        status: "changed".into(),
    }
}

fn fence(lease: &Lease) -> Fence {
    Fence {
        lease_id: lease.lease_id,
        generation: lease.generation,
    }
}

/// `LEASE_EXPIRED` unless `lease` is live at `now` (not ended, not expired, this
/// generation): the check of an act whose own update does not fence the lease.
fn require_live(db: &mut dyn Statements, lease: &Lease, now: Millis) -> Result<()> {
    if !db.is_fence_live(fence(lease), now)? {
        return Err(Error::LeaseExpired("it is no longer live".into()));
    }
    Ok(())
}

fn reread(db: &mut dyn Statements, id: &str) -> Result<RequestRow> {
    db.answer_target(id)?
        .ok_or_else(|| Error::NotFound(id.to_string()))
}

fn outcome_of(db: &mut dyn Statements, id: &str) -> Result<Outcome> {
    reread(db, id)?.outcome().ok_or_else(|| changed(id))
}

/// Request `id` if `lease` may act on it: of the lease's context, open, and not claimed
/// by another lease.
pub fn load_open(db: &mut dyn Statements, lease: &Lease, id: &str) -> Result<RequestRow> {
    let r = reread(db, id)?;
    if r.context != lease.context {
        return Err(Error::WrongContext {
            id: id.into(),
            request_context: r.context,
            lease_context: lease.context.clone(),
        });
    }
    if r.status.is_final() {
        return Err(Error::RequestFinal {
            id: id.into(),
            status: r.status.as_str().into(),
        });
    }
    if r.status == Status::Claimed && r.claimed_lease != Some(lease.lease_id) {
        return Err(Error::ClaimedElsewhere { id: id.into() });
    }
    Ok(r)
}

/// Run `act` with the lease `lease` resolves to, on request `id` (none for a claim of the
/// next request): a token's live lease, the same acting for someone, or a transient lease
/// registered for this one act and released after it ([`leases::resolve`]). `context`:
/// the request's context, when the caller read it already.
fn with_lease<T>(
    db: &mut dyn Statements,
    now: Millis,
    lease: &LeaseRef,
    id: Option<&str>,
    context: Option<&str>,
    act: impl FnOnce(&mut dyn Statements, &Lease) -> Result<T>,
) -> Result<T> {
    let (l, transient) = leases::resolve(db, now, lease, id, context)?;
    let done = act(db, &l)?;
    if let Some(token) = transient {
        leases::release(db, now, &token)?;
    }
    Ok(done)
}

/// Claim `id` with `lease` ([`claim`]).
pub fn claim_with(
    db: &mut dyn Statements,
    now: Millis,
    lease: &LeaseRef,
    id: &str,
) -> Result<RequestRow> {
    with_lease(db, now, lease, Some(id), None, |db, l| {
        claim(db, now, l, id)
    })
}

/// Claim the oldest pending request of `lease`'s context ([`claim_next`]).
pub fn claim_next_with(
    db: &mut dyn Statements,
    now: Millis,
    lease: &LeaseRef,
) -> Result<RequestRow> {
    with_lease(db, now, lease, None, None, |db, l| claim_next(db, now, l))
}

/// Cancel `id` with `lease` ([`cancel`]).
pub fn cancel_with(
    db: &mut dyn Statements,
    now: Millis,
    lease: &LeaseRef,
    id: &str,
    reason: Option<&str>,
) -> Result<Outcome> {
    with_lease(db, now, lease, Some(id), None, |db, l| {
        cancel(db, now, l, id, reason)
    })
}

/// Answer `id` with `lease` ([`answer`]). `people` says which person a voter is, for a
/// request with a quorum.
///
/// A vote takes no lease: an answer to a request with a quorum by a one-shot provider
/// (`Transient`, `dshq answer --name NAME`) or a reviewer voting as themselves (`Voter`)
/// is cast without registering or using the context's lease, so voters on different faces
/// never meet DUPLICATE_PROVIDER; a vote made with a lease (a token) is fenced by it.
///
/// `for_person`: the away person this answer is made for by their delegate (the one who
/// acts), checked by [`super::delegation::admit_for`] and recorded as "D for P".
#[allow(clippy::too_many_arguments)]
pub fn answer_with(
    db: &mut dyn Statements,
    now: Millis,
    lease: &LeaseRef,
    id: &str,
    a: &Answer,
    people: &People,
    for_person: Option<&str>,
) -> Result<Answered> {
    let leaseless = match lease {
        LeaseRef::Transient { name, .. } => Some(Actor::Provider(name.clone())),
        LeaseRef::Voter(actor) => Some(actor.clone()),
        LeaseRef::Token(_) | LeaseRef::OnBehalf { .. } => None,
    };
    // The request's context, when it was read here (a one-shot answer), for the lease.
    let mut context = None;
    if let Some(actor) = leaseless {
        let r = reread(db, id)?;
        context = Some(r.context.clone());
        if let Some(q) = r.required_quorum() {
            if r.status.is_final() {
                return Err(Error::RequestFinal {
                    id: id.into(),
                    status: r.status.as_str().into(),
                });
            }
            let request = r.request().ok_or_else(|| Error::NotFound(id.into()))?;
            let decisions = check_answer(&request.questions, a)?;
            let a = in_question_order(&request.questions, a);
            let voter = Voter {
                actor,
                lease: None,
                for_person,
            };
            return vote(db, now, &voter, &r, &q, &a, &decisions, people);
        }
    }
    with_lease(db, now, lease, Some(id), context.as_deref(), |db, l| {
        answer_for(db, now, l, id, a, people, for_person)
    })
}

/// Reserve a pending request for the live lease (idempotent for its own claims).
pub fn claim(db: &mut dyn Statements, now: Millis, lease: &Lease, id: &str) -> Result<RequestRow> {
    let r = load_open(db, lease, id)?;
    if r.status == Status::Claimed {
        return Ok(r);
    }
    if !db.set_claimed_if_pending_and_lease_live(r.seq, fence(lease), now)? {
        return Err(Error::ClaimedElsewhere { id: id.into() });
    }
    db.append_event(
        now,
        NewEvent {
            kind: EventKind::Claimed,
            request_id: Some(id),
            lease_id: Some(lease.lease_id),
            actor: lease.actor(),
            agent_id: None,
            data: serde_json::Value::Null,
        },
    )?;
    super::deliveries::notify(
        db,
        now,
        EventKind::Claimed,
        id,
        &r.context,
        || serde_json::json!({ "by": lease.actor().as_str() }),
    )?;
    reread(db, id)
}

/// Claim the oldest pending request of the lease's context.
pub fn claim_next(db: &mut dyn Statements, now: Millis, lease: &Lease) -> Result<RequestRow> {
    let id = db
        .oldest_pending_id(&lease.context)?
        .ok_or_else(|| Error::NothingPending(lease.context.clone()))?;
    claim(db, now, lease, &id)
}

/// Answer a request with the live lease (claiming it implicitly when pending). An answer
/// that breaks a rule is `BAD_ANSWER` and nothing changes; a final request is
/// `REQUEST_FINAL`, so of several racing answers exactly one wins.
///
/// On a request with a quorum the answer is the reviewer's vote ([`vote`]):
/// [`Answered::Voted`] while the quorum is not met, [`Answered::Finished`] by the vote
/// that meets it (or vetoes it).
pub fn answer(
    db: &mut dyn Statements,
    now: Millis,
    lease: &Lease,
    id: &str,
    answer: &Answer,
    people: &People,
) -> Result<Answered> {
    answer_for(db, now, lease, id, answer, people, None)
}

/// [`answer`], made for the away person `for_person` by their delegate when given.
pub fn answer_for(
    db: &mut dyn Statements,
    now: Millis,
    lease: &Lease,
    id: &str,
    answer: &Answer,
    people: &People,
    for_person: Option<&str>,
) -> Result<Answered> {
    let r = load_open(db, lease, id)?;
    let request = r.request().ok_or_else(|| Error::NotFound(id.into()))?;
    let decisions = check_answer(&request.questions, answer)?;
    // Stored (and published) in question order, whatever order the items came in.
    let answer = in_question_order(&request.questions, answer);
    if let Some(q) = r.required_quorum() {
        let voter = Voter {
            actor: lease.actor(),
            lease: Some(lease),
            for_person,
        };
        return vote(db, now, &voter, &r, &q, &answer, &decisions, people);
    }
    let voter = Voter {
        actor: lease.actor(),
        lease: Some(lease),
        for_person,
    };
    if for_person.is_some() {
        admit_delegate(db, now, &voter, &r, people)?;
    }
    finish_answer(db, now, &voter, &r, &answer, &decisions, None).map(Answered::Finished)
}

/// Who casts a vote: the identity a face authenticated, through a lease (which fences
/// it) or without one (a vote takes none).
struct Voter<'a> {
    actor: Actor,
    lease: Option<&'a Lease>,
    /// The away person the act is made for by their delegate (the actor), if any.
    for_person: Option<&'a str>,
}

/// Admit `voter`'s act for an away person on request `r` ([`super::delegation::admit_for`]):
/// the person of the actor must be their delegate now, and neither of them the asker.
/// The actor's person.
fn admit_delegate(
    db: &mut dyn Statements,
    now: Millis,
    voter: &Voter<'_>,
    r: &RequestRow,
    people: &People,
) -> Result<String> {
    let Some((_, delegate)) = people.of_actor(&voter.actor) else {
        return Err(Error::Forbidden);
    };
    if let Some(p) = voter.for_person {
        super::delegation::admit_for(
            db,
            now,
            &delegate,
            p,
            &people.askers(r.agent_id.as_deref(), &r.source),
            r.id.as_deref().unwrap_or_default(),
            &voter.actor.identity(),
        )?;
    }
    Ok(delegate)
}

impl Voter<'_> {
    /// The name recorded as who answered: the lease's ([`Lease::provider_name`]), else a
    /// one-shot provider's name, else the identity.
    fn provider_name(&self) -> String {
        match (self.lease, &self.actor) {
            (Some(l), _) => l.provider_name(),
            (None, Actor::Provider(n)) => n.clone(),
            (None, a) => a.as_str().into_owned(),
        }
    }
}

/// Answer open request `r` with `answer` (in question order, already checked: its
/// `decisions`) by `actor`, through the live `lease` (or, for the vote that meets a
/// quorum cast without one, none), with its `approvers` when it has a quorum; the outcome.
/// One guarded update: of several racing writers exactly one finishes it.
fn finish_answer(
    db: &mut dyn Statements,
    now: Millis,
    voter: &Voter<'_>,
    r: &RequestRow,
    answer: &Answer,
    decisions: &[Option<Decision>],
    approvers: Option<&[String]>,
) -> Result<Outcome> {
    let (lease, actor) = (voter.lease, &voter.actor);
    let id = r.id.as_deref().unwrap_or_default();
    let request = r.request().ok_or_else(|| Error::NotFound(id.into()))?;
    let answer_json = answer.to_json();
    let decision = request_decision(decisions).map(Decision::as_str);
    let provider = voter.provider_name();
    let approvers_json = approvers
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| Error::Invalid(format!("the approvers do not serialize: {e}")))?;
    // Edit-then-approve: each edited proposal with the approved text and their diff,
    // kept on the row and recorded in the `answered` event (the record check compares
    // the two).
    let edits = edit::edits(&request.questions, answer);
    let edits_value = (!edits.is_empty())
        .then(|| serde_json::to_value(&edits))
        .transpose()
        .map_err(|e| Error::Invalid(format!("the edits do not serialize: {e}")))?;
    let edits_json = edits_value.as_ref().map(serde_json::Value::to_string);
    let row = AnsweredRow {
        seq: r.seq,
        answer_json: &answer_json,
        decision,
        provider: &provider,
        approvers: approvers_json.as_deref(),
        edits_json: edits_json.as_deref(),
        on_behalf_of: voter.for_person,
    };
    let done = match lease {
        Some(l) => db.set_answered_if_open_claimed_by_and_lease_live(row, fence(l), now)?,
        None => db.set_answered_by_vote_if_open(row, now)?,
    };
    if !done {
        return Err(changed(id));
    }
    set_question_answers(db, r.seq, &request.questions, answer, decisions)?;
    let answer_value = serde_json::to_value(answer)
        .map_err(|e| Error::Invalid(format!("the answer does not serialize: {e}")))?;
    let mut data = serde_json::json!({
        "implicitClaim": r.status == Status::Pending,
        "decision": decision,
        "decisions": request.questions.iter().zip(decisions)
            .filter_map(|(q, d)| d.map(|d| (q.id.clone(), serde_json::Value::from(d.as_str()))))
            .collect::<serde_json::Map<_, _>>(),
        // What was answered, and by whom: the row must agree with these.
        "answer": answer_value,
        "provider": provider,
    });
    if let Some(a) = approvers {
        // Only for a request with a quorum: every other answer is recorded as before.
        data["approvers"] = serde_json::Value::from(a.to_vec());
    }
    if let Some(p) = voter.for_person {
        // Only for a delegate's answer: "D for P" (the actor is D).
        data["for"] = serde_json::Value::from(p);
    }
    if let (Some(v), Some(o)) = (edits_value, data.as_object_mut()) {
        // Only when something was edited: every other answer's event keeps its shape.
        o.insert("edits".into(), v);
    }
    db.append_event(
        now,
        NewEvent {
            kind: EventKind::Answered,
            request_id: Some(id),
            lease_id: lease.map(|l| l.lease_id),
            actor: actor.clone(),
            data,
            agent_id: None,
        },
    )?;
    super::deliveries::notify(
        db,
        now,
        EventKind::Answered,
        id,
        &r.context,
        || serde_json::json!({ "decision": decision, "provider": provider }),
    )?;
    outcome_of(db, id)
}

/// A reviewer's vote on open request `r` with quorum `q`. The voter is the
/// identity its face authenticated (`provider:NAME`, `web:NAME`, `mcp:CLIENT`,
/// `slack:REVIEWER`, `mail:ADDRESS`) and the person `people` says it is: the asker (as a
/// person) and, with a group, anyone outside it are refused. One person votes once: the
/// same identity giving the same answer again is accepted and counted once (an answer
/// file replayed); the same person through another identity, or with another answer, is
/// `ALREADY_VOTED`. A vote is recorded with a `voted` event, does not claim the request,
/// and takes no lease (one made through a lease is fenced by it). The votes are then
/// counted under the request's row lock: the vote that meets the quorum answers the
/// request with its approvers (or, under the veto rule, the first decline answers it with
/// that decline) through a guarded update, as any answer.
#[allow(clippy::too_many_arguments)]
fn vote(
    db: &mut dyn Statements,
    now: Millis,
    voter: &Voter<'_>,
    r: &RequestRow,
    q: &Required,
    answer: &Answer,
    decisions: &[Option<Decision>],
    people: &People,
) -> Result<Answered> {
    let id = r.id.as_deref().unwrap_or_default();
    let (voter_id, person, joined) = admit_voter(db, now, voter, r, q, people)?;
    // Lock order: the lease row (shared), then the request row.
    if let Some(l) = voter.lease {
        require_live(db, l, now)?;
    }
    if !db.lock_request_if_open_for_vote(r.seq)? {
        // Finished by another writer since it was read.
        return Err(changed(id));
    }
    let ballot = Ballot {
        voter_id,
        person,
        answer_json: answer.to_json(),
        decision: request_decision(decisions),
        for_person: voter.for_person.map(str::to_string),
        joined,
    };
    let votes = record_vote(db, now, voter, r, q, answer, &ballot)?;
    let voter_id = ballot.voter_id;
    let (winning, approvers) = match q.verdict(&votes) {
        Verdict::Open => {
            return Ok(Answered::Voted(Box::new(Voted {
                id: id.into(),
                status: "voted".into(),
                voter: voter_id,
                quorum: QuorumView::of(q, &votes),
            })))
        }
        Verdict::Met { answer, approvers } => (answer, approvers),
        Verdict::Vetoed { answer, voter } => (answer, vec![voter]),
    };
    let request = r.request().ok_or_else(|| Error::NotFound(id.into()))?;
    let winning: Answer = serde_json::from_str(&winning)
        .map_err(|e| Error::Invalid(format!("a recorded vote does not parse: {e}")))?;
    let decisions = check_answer(&request.questions, &winning)?;
    // Reread: the row is locked, and this is the state the guarded update will see.
    let r = reread(db, id)?;
    finish_answer(db, now, voter, &r, &winning, &decisions, Some(&approvers))
        .map(Answered::Finished)
}

/// Who may vote on `r`: the voter as the person `people` says it is, refused when it is
/// the asker or, with a group, outside it (a group sign-ins fill also admits whom their
/// latest sign-in put in it: that membership is returned, for the record). The identity
/// as groups and the record have always named it (for Slack the reviewer, whichever
/// account pressed; the `voted` event's actor names the account), and the person.
fn admit_voter(
    db: &mut dyn Statements,
    now: Millis,
    voter: &Voter<'_>,
    r: &RequestRow,
    q: &Required,
    people: &People,
) -> Result<(String, String, Option<SignInGroup>)> {
    let id = r.id.as_deref().unwrap_or_default();
    let person = admit_delegate(db, now, voter, r, people)?;
    let voter_id = voter.actor.identity().into_owned();
    // A delegate votes in the away person's place: the group, and a sign-in's membership
    // of it, are theirs.
    let member = voter.for_person.unwrap_or(&person);
    let joined = match (&q.group, q.joins_by_sign_in) {
        (Some(g), true) => super::sign_in::member(db, member, g)?,
        _ => None,
    };
    match q.may_vote(
        member,
        &people.askers(r.agent_id.as_deref(), &r.source),
        people,
        joined.is_some(),
    ) {
        Ok(by_sign_in) => Ok((voter_id, person, joined.filter(|_| by_sign_in))),
        Err(Refusal::OwnRequest) => Err(Error::OwnRequest {
            id: id.into(),
            voter: voter_id,
        }),
        Err(Refusal::NotInGroup(group)) => Err(Error::NotInGroup {
            id: id.into(),
            group,
            voter: voter_id,
        }),
        Err(Refusal::Unauthenticated) => Err(Error::Forbidden),
    }
}

/// One vote as it is recorded: who cast it, what it answered, and the sign-in that made
/// the voter a member of the group, when that is how they are one.
struct Ballot {
    voter_id: String,
    person: String,
    answer_json: String,
    decision: Option<Decision>,
    for_person: Option<String>,
    joined: Option<SignInGroup>,
}

/// Record `ballot` on locked request `r` (a `voted` event for a new one) and return the
/// request's votes. One person votes once: the same identity with the same answer again
/// is counted once (an answer file replayed); the same person through another identity,
/// or with another answer, is `ALREADY_VOTED`.
fn record_vote(
    db: &mut dyn Statements,
    now: Millis,
    voter: &Voter<'_>,
    r: &RequestRow,
    q: &Required,
    answer: &Answer,
    ballot: &Ballot,
) -> Result<Vec<Vote>> {
    let id = r.id.as_deref().unwrap_or_default();
    let Ballot {
        voter_id,
        person,
        answer_json,
        decision,
        for_person,
        joined,
    } = ballot;
    // A vote for an away person occupies their delegate and them: a vote that shares a
    // person with an earlier one is refused, but for the very same vote again (a replay).
    let this = Vote {
        voter: voter_id.clone(),
        person: Some(person.clone()),
        answer: answer_json.clone(),
        decision: *decision,
        at_ms: now,
        for_person: for_person.clone(),
    };
    if let Some(earlier) = db.votes_of_request(r.seq)?.iter().find(|v| {
        v.overlaps(&this)
            && (v.voter != this.voter || v.answer != this.answer || v.for_person != this.for_person)
    }) {
        return Err(Error::AlreadyVoted {
            id: id.into(),
            voter: match &earlier.for_person {
                Some(p) => format!(
                    "{voter_id}: {} voted as {} for {p},",
                    earlier.person_key(),
                    earlier.voter
                ),
                None => format!(
                    "{voter_id}, the person {} who voted as {},",
                    earlier.person_key(),
                    earlier.voter
                ),
            },
        });
    }
    let new = db.insert_vote_if_voter_new(
        NewVote {
            request_seq: r.seq,
            voter: voter_id,
            person,
            answer_json,
            decision: decision.map(Decision::as_str),
            lease_id: voter.lease.map(|l| l.lease_id),
            for_person: for_person.as_deref(),
        },
        now,
    )?;
    let votes = db.votes_of_request(r.seq)?;
    if new {
        let answer_value = serde_json::to_value(answer)
            .map_err(|e| Error::Invalid(format!("the answer does not serialize: {e}")))?;
        let mut data = serde_json::json!({
            "voter": voter_id,
            "person": person,
            "answer": answer_value,
            "decision": decision.map(Decision::as_str),
            "approvals": q.approvals,
        });
        if let Some(j) = joined {
            // The member by sign-in: which group, and the sign-in (its subject and time,
            // those of its `signed-in` event) whose claims put them there.
            data["joined"] = serde_json::json!({
                "group": j.quorum_group,
                "subject": j.subject,
                "signedIn": crate::clock::rfc3339(j.signed_in_ms),
            });
        }
        if let Some(p) = for_person {
            // Only for a delegate's vote: "D for P".
            data["for"] = serde_json::Value::from(p.as_str());
        }
        db.append_event(
            now,
            NewEvent {
                kind: EventKind::Voted,
                request_id: Some(id),
                lease_id: voter.lease.map(|l| l.lease_id),
                actor: voter.actor.clone(),
                data,
                agent_id: None,
            },
        )?;
    } else if let Some(earlier) = votes
        .iter()
        .find(|v| v.person_key() == person.as_str() || v.voter == *voter_id)
        .filter(|v| v.voter != *voter_id || v.answer != *answer_json)
    {
        return Err(Error::AlreadyVoted {
            id: id.into(),
            voter: if earlier.voter == *voter_id {
                voter_id.clone()
            } else {
                format!(
                    "{voter_id}, the person {person} who voted as {},",
                    earlier.voter
                )
            },
        });
    }
    Ok(votes)
}

/// The provider side cancels a request (`ASK_CANCELLED`); the cancelling lease is
/// recorded as the request's lease.
pub fn cancel(
    db: &mut dyn Statements,
    now: Millis,
    lease: &Lease,
    id: &str,
    reason: Option<&str>,
) -> Result<Outcome> {
    let r = load_open(db, lease, id)?;
    require_live(db, lease, now)?;
    let provider = lease.provider_name();
    let message = match reason {
        Some(reason) => format!("cancelled by provider {provider:?}: {reason}"),
        None => format!("cancelled by provider {provider:?}"),
    };
    finish_error(
        db,
        now,
        &r,
        ErrorEnd {
            seq: r.seq,
            status: Status::Cancelled,
            code: Code::AskCancelled,
            message: &message,
            provider: Some(&provider),
            lease_id: Some(lease.lease_id),
        },
        &lease.actor(),
    )
}

/// The asker aborts a request (`ASK_ABORTED`). Needs no lease.
pub fn abort(
    db: &mut dyn Statements,
    now: Millis,
    id: &str,
    reason: Option<&str>,
    actor: &Actor,
) -> Result<Outcome> {
    let r = reread(db, id)?;
    if r.status.is_final() {
        return Err(Error::RequestFinal {
            id: id.into(),
            status: r.status.as_str().into(),
        });
    }
    // The reason is kept as given, but never with U+0000, which no text in dshq may hold
    // (`protocol::syntax::writes_nul`): every surface's abort comes through here.
    let message = crate::protocol::syntax::without_nul(match reason {
        Some(reason) => format!("aborted by the asker: {reason}"),
        None => "aborted by the asker".to_string(),
    });
    finish_error(
        db,
        now,
        &r,
        ErrorEnd {
            seq: r.seq,
            status: Status::Aborted,
            code: Code::AskAborted,
            message: &message,
            provider: None,
            lease_id: None,
        },
        actor,
    )
}

/// End open request `r` with an error (`end.status` is `cancelled`, `aborted` or `expired`), with
/// its event by `actor`; its outcome.
pub fn finish_error(
    db: &mut dyn Statements,
    now: Millis,
    r: &RequestRow,
    end: ErrorEnd<'_>,
    actor: &Actor,
) -> Result<Outcome> {
    let kind = match end.status {
        Status::Cancelled => EventKind::Cancelled,
        Status::Aborted => EventKind::Aborted,
        Status::Expired => EventKind::Expired,
        other => return Err(Error::Invalid(format!("{other} is not an error end"))),
    };
    let id =
        r.id.as_deref()
            .ok_or_else(|| Error::Invalid("an accepted request has an id".into()))?;
    if !db.set_error_end_if_open(end, now)? {
        return Err(changed(id));
    }
    db.append_event(
        now,
        NewEvent {
            kind,
            request_id: Some(id),
            lease_id: end.lease_id,
            actor: actor.clone(),
            data: serde_json::json!({
                "code": end.code.as_str(),
                "message": end.message,
                "provider": end.provider,
            }),
            agent_id: None,
        },
    )?;
    super::deliveries::notify(
        db,
        now,
        kind,
        id,
        &r.context,
        || serde_json::json!({ "code": end.code.as_str(), "message": end.message }),
    )?;
    outcome_of(db, id)
}

/// The outcome when request `id` is already answered with exactly `answer` by lease
/// `lease_id` (live or not: a provider may release its lease right after answering).
pub fn replayed_answer(
    db: &mut dyn Statements,
    id: &str,
    lease_id: i64,
    answer: &Answer,
) -> Result<Option<Outcome>> {
    Ok(db
        .answer_target(id)?
        .filter(|r| {
            r.status == Status::Answered
                && r.claimed_lease == Some(lease_id)
                && r.request().is_some_and(|req| {
                    r.answer.as_deref()
                        == Some(in_question_order(&req.questions, answer).to_json().as_str())
                })
        })
        .and_then(|r| r.outcome()))
}

/// The outcome when request `id` is already cancelled by lease `lease_id`.
pub fn replayed_cancel(
    db: &mut dyn Statements,
    id: &str,
    lease_id: i64,
) -> Result<Option<Outcome>> {
    Ok(db
        .answer_target(id)?
        .filter(|r| r.status == Status::Cancelled && r.claimed_lease == Some(lease_id))
        .and_then(|r| r.outcome()))
}

/// An error that ends the whole batch of answer files (the database or the disk failed)
/// rather than only the file that met it.
pub fn is_fatal(e: &Error) -> bool {
    matches!(
        e,
        Error::Db(_)
            | Error::Pg(_)
            | Error::Io { .. }
            | Error::Pragma { .. }
            | Error::SchemaTooNew { .. }
    )
}

/// Apply one answer or cancel file with its token. An identical answer (or a cancel)
/// that the token's lease already made, live or not (it may have been released since),
/// is accepted once more: this is how a file processed again after a crash, between the
/// commit and the file's removal, is applied exactly once.
///
/// The token names its lease whatever its state for the replay check; acting needs it
/// live. Returns the outcome and whether it was such a replay.
pub fn apply_answer_file(
    db: &mut dyn Statements,
    now: Millis,
    file: &ProviderFile,
    people: &People,
) -> Result<(Option<Outcome>, bool)> {
    let token = match file {
        ProviderFile::Answer { token, .. } | ProviderFile::Cancel { token, .. } => token,
    };
    if let Ok(lease_id) = leases::identify(db, token) {
        let replayed = match file {
            ProviderFile::Answer { id, answer, .. } => replayed_answer(db, id, lease_id, answer)?,
            ProviderFile::Cancel { id, .. } => replayed_cancel(db, id, lease_id)?,
        };
        if let Some(o) = replayed {
            return Ok((Some(o), true));
        }
    }
    let lease = leases::authenticate(db, token, now)?;
    let done = match file {
        ProviderFile::Answer { id, answer, .. } => {
            match self::answer(db, now, &lease, id, answer, people)? {
                Answered::Finished(o) => Some(o),
                // A vote that left its request open (a quorum): nothing to publish yet.
                Answered::Voted(_) => None,
            }
        }
        ProviderFile::Cancel { id, reason, .. } => {
            Some(cancel(db, now, &lease, id, reason.as_deref())?)
        }
    };
    Ok((done, false))
}

/// Apply a batch of answer files in one transaction, each under its own savepoint: a file
/// that fails is undone and its error returned in its place; a fatal error
/// ([`is_fatal`]) ends the batch.
pub fn apply_answer_files(
    db: &mut dyn Statements,
    now: Millis,
    files: &[ProviderFile],
    people: &People,
) -> Result<Vec<std::result::Result<Option<Outcome>, Error>>> {
    let mut results = Vec::with_capacity(files.len());
    for file in files {
        db.savepoint_answer_file()?;
        match apply_answer_file(db, now, file, people) {
            Ok((o, _)) => {
                db.release_answer_file()?;
                results.push(Ok(o));
            }
            Err(e) if is_fatal(&e) => return Err(e),
            Err(e) => {
                db.rollback_answer_file()?;
                results.push(Err(e));
            }
        }
    }
    Ok(results)
}

/// The first request after feed position `after` that the lease `lease_id` of `context`
/// may work on next: pending, or claimed by it.
pub fn next_for_lease(
    db: &mut (impl AnswerReads + ?Sized),
    context: &str,
    lease_id: i64,
    after: i64,
) -> Result<Option<String>> {
    db.first_open_for_lease_after(context, lease_id, after)
}

/// Record each question's part of `answer` on its question row (the labels, the custom
/// text, its decision): what a person's answer and a ladder's declared default both do
/// once the request row is answered.
pub fn set_question_answers(
    db: &mut dyn Statements,
    request_seq: i64,
    questions: &[crate::protocol::types::Question],
    answer: &Answer,
    decisions: &[Option<Decision>],
) -> Result<()> {
    for (idx, q) in questions.iter().enumerate() {
        let item = answer
            .answers
            .iter()
            .find(|a| a.id == q.id)
            .ok_or_else(|| Error::Invalid(format!("question {:?} has no answer", q.id)))?;
        let selected = serde_json::to_string(&item.selected)
            .map_err(|e| Error::Invalid(format!("the labels do not serialize: {e}")))?;
        db.set_question_answer(AnsweredQuestion {
            request_seq,
            idx: idx as i64,
            selected_json: &selected,
            custom: item.custom.as_deref(),
            decision: decisions.get(idx).copied().flatten().map(Decision::as_str),
        })?;
    }
    Ok(())
}
