//! Provider leases: one live provider per context, fenced by an unguessable token.
//!
//! A token is `LEASE_ID.SECRET` where SECRET is 32 bytes from the OS; only its SHA-256 is
//! stored and it is compared in constant time. Every operation authenticates the token
//! and requires the lease to be live at `now` (not ended, `now <= expiresAt`) inside the
//! same write transaction as its write, and a heartbeat is a conditional update naming
//! the lease id and generation: a stale holder matches no row and gets `LEASE_EXPIRED`.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::clock::{rfc3339, Millis};
use crate::core::audit::{Actor, EventKind};
use crate::core::lifecycle::LeaseEnd;
use crate::error::{Error, Result, WebHolder};
use crate::store::calls::LeaseRef;
use crate::store::chain::{hex, NewEvent};
use crate::store::driver::leases::{LeaseInfoRow, LeaseRow, NewLease};
use crate::store::driver::{LeaseReads, Statements};
use crate::store::types::{HostMark, Lease, LeaseInfo, Registered, Revoked};

fn new_secret() -> Result<[u8; 32]> {
    let mut b = [0u8; 32];
    getrandom::getrandom(&mut b)
        .map_err(|e| Error::Invalid(format!("the OS random source failed: {e}")))?;
    Ok(b)
}

fn split_token(token: &str) -> Option<(i64, &str)> {
    let (id, secret) = token.trim().split_once('.')?;
    let id = id.parse::<i64>().ok()?;
    if secret.len() != 64 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((id, secret))
}

fn duplicate(
    context: &str,
    name: &str,
    since: Millis,
    expires: Millis,
    web: Option<Box<WebHolder>>,
) -> Error {
    Error::DuplicateProvider {
        context: context.to_string(),
        name: crate::text::one_line(name).into_owned(),
        since: rfc3339(since),
        expires: rfc3339(expires),
        web,
    }
}

/// Register a provider in `context`. `DUPLICATE_PROVIDER` when a live lease exists (it is
/// kept, never replaced; the error names its holder, since and until when, and how to end
/// it on purpose with [`revoke`]).
pub fn register(
    db: &mut dyn Statements,
    now: Millis,
    context: &str,
    name: &str,
    ttl_ms: Millis,
    host: Option<&HostMark>,
) -> Result<Registered> {
    crate::protocol::check::check_id("context", context)?;
    if name.trim().is_empty() {
        return Err(Error::Invalid("the provider name must not be empty".into()));
    }
    if ttl_ms <= 0 {
        return Err(Error::Invalid("the lease ttl must be positive".into()));
    }
    db.lock_row_numbers()?;
    // The write swept at `now` first, so any unended lease here is live.
    if let Some(live) = db.unended_lease_of_context(context)? {
        let web = WebHolder::from_columns(live.host_label, live.host_idle_ms);
        return Err(duplicate(
            context,
            &live.name,
            live.created_ms,
            live.expires_ms,
            web,
        ));
    }
    let generation = db.next_lease_generation(context)?;
    let secret = hex(&new_secret()?);
    let digest = Sha256::digest(secret.as_bytes());
    let expires = now.saturating_add(ttl_ms);
    let new = NewLease {
        context,
        name,
        generation,
        digest: digest.as_slice(),
        ttl_ms,
        now,
        expires_ms: expires,
        host: host.map(|h| (h.id.as_str(), h.label.as_str(), h.idle_ms)),
    };
    // Refused by the index only if a lease was registered since the read above, which
    // the row-number lock rules out: the index, not luck, has the last word.
    let Some(lease_id) = db.insert_lease_if_none_unended(&new)? else {
        return Err(duplicate(context, name, now, expires, None));
    };
    db.append_event(
        now,
        NewEvent {
            kind: EventKind::LeaseRegistered,
            lease_id: Some(lease_id),
            actor: Actor::Provider(name.to_string()),
            data: serde_json::json!({"context": context, "generation": generation, "ttlMs": ttl_ms}),
            request_id: None,
            agent_id: None,
        },
    )?;
    Ok(Registered {
        lease: format!("{lease_id}.{secret}"),
        context: context.to_string(),
        name: name.to_string(),
        generation,
        expires_at: rfc3339(expires),
    })
}

/// The lease of `token` when its secret matches, whatever its state; `LEASE_EXPIRED` for
/// an unknown or forged token (the two are not told apart).
fn load(db: &mut (impl LeaseReads + ?Sized), token: &str) -> Result<LeaseRow> {
    let (id, secret) = split_token(token)
        .ok_or_else(|| Error::LeaseExpired("the token is not a dshq lease token".into()))?;
    let unknown = || Error::LeaseExpired("no such lease".into());
    let row = db.lease_by_id(id)?.ok_or_else(unknown)?;
    let given = Sha256::digest(secret.as_bytes());
    if !bool::from(given.as_slice().ct_eq(&row.digest)) {
        return Err(unknown());
    }
    Ok(row)
}

/// The lease id of `token` when its secret matches, whatever the lease's state (for
/// recognising an operation that lease already made).
pub fn identify(db: &mut (impl LeaseReads + ?Sized), token: &str) -> Result<i64> {
    Ok(load(db, token)?.lease_id)
}

/// Authenticate `token` and require it to be the live lease at `now`.
pub fn authenticate(
    db: &mut (impl LeaseReads + ?Sized),
    token: &str,
    now: Millis,
) -> Result<Lease> {
    let row = load(db, token)?;
    if let Some(reason) = row.end_reason {
        if let Some(by) = revoked_by(db, row.lease_id)? {
            return Err(Error::LeaseExpired(format!(
                "it was revoked by {}",
                crate::text::one_line(&by)
            )));
        }
        return Err(Error::LeaseExpired(format!("it was {reason}")));
    }
    if now > row.expires_ms {
        return Err(Error::LeaseExpired(format!(
            "it expired at {}",
            rfc3339(row.expires_ms)
        )));
    }
    Ok(Lease {
        lease_id: row.lease_id,
        context: row.context,
        name: row.name,
        generation: row.generation,
        ttl_ms: row.ttl_ms,
        expires_ms: row.expires_ms,
        on_behalf: None,
    })
}

/// Who revoked `lease_id` (from its `lease-revoked` event), if it was revoked.
fn revoked_by(db: &mut (impl LeaseReads + ?Sized), lease_id: i64) -> Result<Option<String>> {
    Ok(db.lease_revoked_event_data(lease_id)?.map(|d| {
        serde_json::from_str::<serde_json::Value>(&d)
            .ok()
            .and_then(|v| v["by"].as_str().map(str::to_string))
            .unwrap_or_else(|| "someone".into())
    }))
}

/// Extend the live lease by its ttl; `LEASE_EXPIRED` for anything but the live lease.
pub fn heartbeat(db: &mut dyn Statements, now: Millis, token: &str) -> Result<Lease> {
    let mut lease = authenticate(db, token, now)?;
    let expires = now.saturating_add(lease.ttl_ms);
    if !db.extend_lease_if_live(lease.lease_id, lease.generation, now, expires)? {
        return Err(Error::LeaseExpired("it is no longer live".into()));
    }
    lease.expires_ms = expires;
    Ok(lease)
}

/// End the lease; its claims go back to `pending`. Releasing an ended lease is not an
/// error (returns `false`); an unknown or forged token is `LEASE_EXPIRED`.
pub fn release(db: &mut dyn Statements, now: Millis, token: &str) -> Result<bool> {
    let row = load(db, token)?;
    if row.end_reason.is_some() {
        return Ok(false);
    }
    end(db, now, row.lease_id, &row.name, LeaseEnd::Released)?;
    Ok(true)
}

/// End the live lease of `context` on purpose, on behalf of someone other than its holder
/// (`dshq provider revoke`): a `lease-revoked` event records who (`by`) and why; its claims
/// go back to `pending`. The row ends as `released` (the schema knows no other early end);
/// the event tells the two apart, and fencing is the same: the old token is dead.
/// `NO_PROVIDER` when no lease is live in the context.
pub fn revoke(
    db: &mut dyn Statements,
    now: Millis,
    context: &str,
    by: &str,
    reason: Option<&str>,
) -> Result<Revoked> {
    crate::protocol::check::check_id("context", context)?;
    // The write swept at `now` first, so any unended lease here is live.
    let Some(live) = db.unended_lease_of_context(context)? else {
        return Err(Error::NoLiveLease(context.to_string()));
    };
    if !db.end_lease_if_unended(live.lease_id, now, LeaseEnd::Released)? {
        // Ended by another writer since the read: it is not live any more.
        return Err(Error::NoLiveLease(context.to_string()));
    }
    db.append_event(
        now,
        NewEvent {
            kind: EventKind::LeaseRevoked,
            lease_id: Some(live.lease_id),
            actor: Actor::Cli,
            request_id: None,
            agent_id: None,
            data: serde_json::json!({
                "context": context,
                "holder": live.name,
                "generation": live.generation,
                "by": by,
                "reason": reason,
            }),
        },
    )?;
    let released = unclaim_all(db, now, live.lease_id, "lease revoked", &Actor::Cli)?;
    Ok(Revoked {
        context: context.to_string(),
        name: live.name,
        generation: live.generation,
        released,
    })
}

/// End every unended lease held by the host `host_id` (its earlier life's, at its start):
/// each is released as its holder would release it, its claims back to `pending`.
pub fn take_over(db: &mut dyn Statements, now: Millis, host_id: &str) -> Result<Vec<Revoked>> {
    let held = db.unended_leases_of_host(host_id)?;
    let mut out = Vec::with_capacity(held.len());
    for lease in held {
        let released = end(db, now, lease.lease_id, &lease.name, LeaseEnd::Released)?;
        out.push(Revoked {
            context: lease.context,
            name: lease.name,
            generation: lease.generation,
            released,
        });
    }
    Ok(out)
}

/// End every lease whose `expiresAt` has passed at `now`; returns each with the request ids
/// that went back to `pending`.
pub fn expire_due(db: &mut dyn Statements, now: Millis) -> Result<Vec<(i64, Vec<String>)>> {
    let due = db.unended_leases_expired_before(now)?;
    let mut out = Vec::with_capacity(due.len());
    for (id, name) in due {
        let released = end(db, now, id, &name, LeaseEnd::Expired)?;
        out.push((id, released));
    }
    Ok(out)
}

/// End a lease for `reason` and return its claims to `pending`; returns the released ids.
/// An expiry is the sweep's doing (the daemon's); a release is the provider's.
fn end(
    db: &mut dyn Statements,
    now: Millis,
    lease_id: i64,
    name: &str,
    reason: LeaseEnd,
) -> Result<Vec<String>> {
    if !db.end_lease_if_unended(lease_id, now, reason)? {
        // Another writer ended it first, and recorded it: nothing is released twice.
        return Ok(Vec::new());
    }
    let (actor, kind) = match reason {
        LeaseEnd::Expired => (Actor::Daemon, EventKind::LeaseExpired),
        LeaseEnd::Released => (Actor::Provider(name.to_string()), EventKind::LeaseReleased),
    };
    db.append_event(
        now,
        NewEvent {
            kind,
            lease_id: Some(lease_id),
            actor: actor.clone(),
            request_id: None,
            agent_id: None,
            data: serde_json::Value::Null,
        },
    )?;
    unclaim_all(
        db,
        now,
        lease_id,
        &format!("lease {}", reason.as_str()),
        &actor,
    )
}

/// Return every request claimed by `lease_id` to `pending` (its lease ended), each with a
/// `released` event.
fn unclaim_all(
    db: &mut dyn Statements,
    now: Millis,
    lease_id: i64,
    reason: &str,
    actor: &Actor,
) -> Result<Vec<String>> {
    let ids = db.unclaim_requests_of_lease(lease_id)?;
    for id in &ids {
        db.append_event(
            now,
            NewEvent {
                kind: EventKind::Released,
                request_id: Some(id),
                lease_id: Some(lease_id),
                actor: actor.clone(),
                data: serde_json::json!({"reason": reason}),
                agent_id: None,
            },
        )?;
    }
    Ok(ids)
}

/// Whether a provider is live in `context` at `now`.
pub fn live_in(db: &mut (impl LeaseReads + ?Sized), context: &str, now: Millis) -> Result<bool> {
    db.live_lease_exists(context, now)
}

fn info_at(r: LeaseInfoRow, now: Millis) -> LeaseInfo {
    LeaseInfo {
        lease_id: r.lease_id,
        context: r.context,
        name: r.name,
        generation: r.generation,
        live: r.ended_ms.is_none() && now <= r.expires_ms,
        created_at: rfc3339(r.created_ms),
        heartbeat_at: rfc3339(r.heartbeat_ms),
        expires_at: rfc3339(r.expires_ms),
        ended_at: r.ended_ms.map(rfc3339),
        end_reason: r.end_reason,
        claimed: r.claimed,
    }
}

/// The live (or not-yet-swept) lease of each context, or of one context.
pub fn status(
    db: &mut (impl LeaseReads + ?Sized),
    context: Option<&str>,
    now: Millis,
) -> Result<Vec<LeaseInfo>> {
    Ok(db
        .unended_lease_infos(context)?
        .into_iter()
        .map(|r| info_at(r, now))
        .collect())
}

/// One lease by token (live or not), for `provider status --lease`.
pub fn info(db: &mut (impl LeaseReads + ?Sized), token: &str, now: Millis) -> Result<LeaseInfo> {
    let row = load(db, token)?;
    let info = db
        .lease_info(row.lease_id)?
        .ok_or_else(|| Error::LeaseExpired("no such lease".into()))?;
    Ok(info_at(info, now))
}

/// The lease a provider act is made by: a token's live lease, the same acting for
/// `actor` (recorded as the one it acts for), or a transient lease registered in the
/// context of request `id` for this one act (its token returned, for the caller to
/// release after the act). `context`: that request's context when the caller read it
/// already.
pub fn resolve(
    db: &mut dyn Statements,
    now: Millis,
    lease: &LeaseRef,
    id: Option<&str>,
    context: Option<&str>,
) -> Result<(Lease, Option<String>)> {
    match lease {
        LeaseRef::Token(token) => Ok((authenticate(db, token, now)?, None)),
        LeaseRef::OnBehalf { token, actor } => {
            let mut lease = authenticate(db, token, now)?;
            lease.on_behalf = Some(actor.clone());
            Ok((lease, None))
        }
        // Only a vote is made without a lease ([`super::answers::answer_with`] casts it).
        LeaseRef::Voter(_) => Err(Error::Invalid(
            "only a vote on a request with a quorum is made without a lease".into(),
        )),
        LeaseRef::Transient { name, ttl_ms } => {
            let id = id.ok_or_else(|| {
                Error::Invalid("a transient lease acts on one named request".into())
            })?;
            let context = match context {
                Some(c) => c.to_string(),
                None => {
                    db.answer_target(id)?
                        .ok_or_else(|| Error::NotFound(id.to_string()))?
                        .context
                }
            };
            let reg = register(db, now, &context, name, *ttl_ms, None)?;
            let lease = authenticate(db, &reg.lease, now)?;
            Ok((lease, Some(reg.lease)))
        }
    }
}
