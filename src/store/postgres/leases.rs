//! Provider leases on PostgreSQL: one live provider per context, fenced by an unguessable
//! token — the SQLite backend's rules, ported one to one.
//!
//! A token is `LEASE_ID.SECRET`; only the secret's SHA-256 is stored and it is compared in
//! constant time. Every operation authenticates the token and requires the lease to be
//! live at `now` (the database's clock) inside the same write transaction as its write, and
//! heartbeat is a conditional update naming the lease id and generation: a stale holder
//! matches no row and gets `LEASE_EXPIRED`. The partial unique index `leases_live` backs
//! the check made under the write lock: a unique violation on it is `DUPLICATE_PROVIDER`.

use postgres::types::Type;
use postgres::{GenericClient, Row};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::events::{self};
use super::tx::Tx;
use crate::clock::{rfc3339, Millis};
use crate::core::audit::{Actor, EventKind};
use crate::core::lifecycle::LeaseEnd;
use crate::error::WebHolder;
use crate::error::{Error, Result};
use crate::store::chain::{hex, NewEvent};
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
/// kept, never replaced).
pub fn register(
    t: &mut Tx<'_>,
    context: &str,
    name: &str,
    ttl_ms: Millis,
    host: Option<&HostMark>,
    now: Millis,
) -> Result<Registered> {
    crate::protocol::check::check_id("context", context)?;
    if name.trim().is_empty() {
        return Err(Error::Invalid("the provider name must not be empty".into()));
    }
    if ttl_ms <= 0 {
        return Err(Error::Invalid("the lease ttl must be positive".into()));
    }
    // The caller swept at `now`, so any unended lease here is live.
    if let Some(r) = t.tx.query_opt(
        "SELECT name, created_ms, expires_ms, host_label, host_idle_ms
         FROM leases WHERE context = $1 AND ended_ms IS NULL",
        &[&context],
    )? {
        let live_name: String = r.try_get(0)?;
        let web = WebHolder::from_columns(r.try_get(3)?, r.try_get(4)?);
        return Err(duplicate(
            context,
            &live_name,
            r.try_get(1)?,
            r.try_get(2)?,
            web,
        ));
    }
    let generation: i64 =
        t.tx.query_one(
            "SELECT (COALESCE(MAX(generation), 0) + 1)::bigint FROM leases WHERE context = $1",
            &[&context],
        )?
        .try_get(0)?;
    let secret = hex(&new_secret()?);
    let digest = Sha256::digest(secret.as_bytes());
    let expires = now.saturating_add(ttl_ms);
    let inserted = t.tx.query_one(
        // The id is the largest + 1, taken under the write lock, as SQLite numbers its
        // rows: an identity would leave a gap for every rolled-back registration (a
        // transient lease whose answer was refused), and the ids are in the tokens, the
        // events and the export.
        "INSERT INTO leases (lease_id, context, name, generation, secret_sha256, ttl_ms, created_ms, heartbeat_ms, expires_ms,
                             host_id, host_label, host_idle_ms)
         VALUES ((SELECT COALESCE(MAX(lease_id), 0) + 1 FROM leases),
                 $1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $10) RETURNING lease_id",
        &[
            &context,
            &name,
            &generation,
            &digest.as_slice(),
            &ttl_ms,
            &now,
            &expires,
            &host.map(|h| h.id.as_str()),
            &host.map(|h| h.label.as_str()),
            &host.map(|h| h.idle_ms),
        ],
    );
    let lease_id: i64 = match inserted {
        Ok(r) => r.try_get(0)?,
        // Unreachable under the write lock; kept so the index, not luck, has the last word.
        Err(e) if is_unique_violation(&e, "leases_live") => {
            return Err(duplicate(context, name, now, expires, None))
        }
        Err(e) => return Err(e.into()),
    };
    events::append(
        t,
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

/// Whether `e` is a unique violation of the index or constraint `name`.
pub fn is_unique_violation(e: &postgres::Error, name: &str) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == postgres::error::SqlState::UNIQUE_VIOLATION && db.constraint() == Some(name)
    })
}

struct LeaseRow {
    lease_id: i64,
    context: String,
    name: String,
    generation: i64,
    digest: Vec<u8>,
    ttl_ms: Millis,
    expires_ms: Millis,
    ended: Option<String>,
}

fn load(c: &mut impl GenericClient, token: &str) -> Result<LeaseRow> {
    let (id, secret) = split_token(token)
        .ok_or_else(|| Error::LeaseExpired("the token is not a dshq lease token".into()))?;
    let unknown = || Error::LeaseExpired("no such lease".into());
    let r = c
        .query_typed_opt(
            "SELECT lease_id, context, name, generation, secret_sha256, ttl_ms, expires_ms, end_reason
             FROM leases WHERE lease_id = $1",
            &[(&id, Type::INT8)],
        )?
        .ok_or_else(unknown)?;
    let row = LeaseRow {
        lease_id: r.try_get(0)?,
        context: r.try_get(1)?,
        name: r.try_get(2)?,
        generation: r.try_get(3)?,
        digest: r.try_get(4)?,
        ttl_ms: r.try_get(5)?,
        expires_ms: r.try_get(6)?,
        ended: r.try_get(7)?,
    };
    let given = Sha256::digest(secret.as_bytes());
    if !bool::from(given.as_slice().ct_eq(&row.digest)) {
        return Err(unknown());
    }
    Ok(row)
}

/// The lease id of `token` when its secret matches, whatever the lease's state.
pub fn identify(c: &mut impl GenericClient, token: &str) -> Result<i64> {
    Ok(load(c, token)?.lease_id)
}

/// Authenticate `token` and require it to be the live lease at `now`.
pub fn authenticate(c: &mut impl GenericClient, token: &str, now: Millis) -> Result<Lease> {
    let row = load(c, token)?;
    if let Some(reason) = row.ended {
        if let Some(by) = revoked_by(c, row.lease_id)? {
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

/// Extend the live lease by its ttl; `LEASE_EXPIRED` for anything but the live lease.
pub fn heartbeat(t: &mut Tx<'_>, token: &str, now: Millis) -> Result<Lease> {
    let mut lease = authenticate(&mut t.tx, token, now)?;
    let expires = now.saturating_add(lease.ttl_ms);
    let n = t.tx.execute(
        "UPDATE leases SET heartbeat_ms = $1, expires_ms = $2
         WHERE lease_id = $3 AND generation = $4 AND ended_ms IS NULL AND expires_ms >= $1",
        &[&now, &expires, &lease.lease_id, &lease.generation],
    )?;
    if n != 1 {
        return Err(Error::LeaseExpired("it is no longer live".into()));
    }
    lease.expires_ms = expires;
    Ok(lease)
}

/// End the lease; its claims go back to `pending`. Releasing an ended lease is not an
/// error (returns `false`); an unknown or forged token is `LEASE_EXPIRED`.
pub fn release(t: &mut Tx<'_>, token: &str, now: Millis) -> Result<bool> {
    let row = load(&mut t.tx, token)?;
    if row.ended.is_some() {
        return Ok(false);
    }
    end(t, row.lease_id, &row.name, LeaseEnd::Released, now)?;
    Ok(true)
}

/// Who revoked `lease_id` (from its `lease-revoked` event), if it was revoked.
fn revoked_by(c: &mut impl GenericClient, lease_id: i64) -> Result<Option<String>> {
    let row = c.query_opt(
        "SELECT data FROM events WHERE lease_id = $1 AND kind = $2 AND request_id IS NULL",
        &[&lease_id, &EventKind::LeaseRevoked.as_str()],
    )?;
    let data: Option<String> = match row {
        Some(r) => Some(r.try_get(0)?),
        None => None,
    };
    Ok(data.map(|d| {
        serde_json::from_str::<serde_json::Value>(&d)
            .ok()
            .and_then(|v| v["by"].as_str().map(str::to_string))
            .unwrap_or_else(|| "someone".into())
    }))
}

/// End the live lease of `context` on purpose, on behalf of someone other than its holder;
/// `NO_PROVIDER` when no lease is live in the context.
pub fn revoke(
    t: &mut Tx<'_>,
    context: &str,
    by: &str,
    reason: Option<&str>,
    now: Millis,
) -> Result<Revoked> {
    crate::protocol::check::check_id("context", context)?;
    let Some(r) = t.tx.query_opt(
        "SELECT lease_id, name, generation FROM leases WHERE context = $1 AND ended_ms IS NULL",
        &[&context],
    )?
    else {
        return Err(Error::NoLiveLease(context.to_string()));
    };
    let (lease_id, name, generation): (i64, String, i64) =
        (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
    t.tx.execute(
        "UPDATE leases SET ended_ms = $1, end_reason = $2 WHERE lease_id = $3 AND ended_ms IS NULL",
        &[&now, &LeaseEnd::Released.as_str(), &lease_id],
    )?;
    events::append(
        t,
        now,
        NewEvent {
            kind: EventKind::LeaseRevoked,
            lease_id: Some(lease_id),
            actor: Actor::Cli,
            request_id: None,
            agent_id: None,
            data: serde_json::json!({
                "context": context,
                "holder": name,
                "generation": generation,
                "by": by,
                "reason": reason,
            }),
        },
    )?;
    let released = unclaim_all(t, lease_id, "lease revoked", &Actor::Cli, now)?;
    Ok(Revoked {
        context: context.to_string(),
        name,
        generation,
        released,
    })
}

/// End a lease for `reason` and return its claims to `pending`; returns the released ids.
fn end(
    t: &mut Tx<'_>,
    lease_id: i64,
    name: &str,
    reason: LeaseEnd,
    now: Millis,
) -> Result<Vec<String>> {
    t.tx.execute(
        "UPDATE leases SET ended_ms = $1, end_reason = $2 WHERE lease_id = $3 AND ended_ms IS NULL",
        &[&now, &reason.as_str(), &lease_id],
    )?;
    let (actor, kind) = match reason {
        LeaseEnd::Expired => (Actor::Daemon, EventKind::LeaseExpired),
        LeaseEnd::Released => (Actor::Provider(name.to_string()), EventKind::LeaseReleased),
    };
    events::append(
        t,
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
        t,
        lease_id,
        &format!("lease {}", reason.as_str()),
        &actor,
        now,
    )
}

/// End every lease whose `expiresAt` has passed at `now`; returns each with the request ids
/// that went back to `pending`.
pub fn expire_due(t: &mut Tx<'_>, now: Millis) -> Result<Vec<(i64, Vec<String>)>> {
    let due: Vec<(i64, String)> =
        t.tx.query(
            "SELECT lease_id, name FROM leases WHERE ended_ms IS NULL AND expires_ms < $1
             ORDER BY lease_id",
            &[&now],
        )?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(due.len());
    for (id, name) in due {
        let released = end(t, id, &name, LeaseEnd::Expired, now)?;
        out.push((id, released));
    }
    Ok(out)
}

/// End every unended lease held by the host `host_id` (its earlier life's, at its start):
/// each is released as its holder would release it, its claims back to `pending`.
pub fn take_over(t: &mut Tx<'_>, host_id: &str, now: Millis) -> Result<Vec<Revoked>> {
    let held: Vec<(i64, String, String, i64)> =
        t.tx.query(
            "SELECT lease_id, context, name, generation FROM leases
             WHERE ended_ms IS NULL AND host_id = $1 ORDER BY lease_id",
            &[&host_id],
        )?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?)))
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(held.len());
    for (lease_id, context, name, generation) in held {
        let released = end(t, lease_id, &name, LeaseEnd::Released, now)?;
        out.push(Revoked {
            context,
            name,
            generation,
            released,
        });
    }
    Ok(out)
}

/// Whether a provider is live in `context` at `now`.
pub fn live_in(c: &mut impl GenericClient, context: &str, now: Millis) -> Result<bool> {
    Ok(c.query_opt(
        "SELECT 1 FROM leases WHERE context = $1 AND ended_ms IS NULL AND expires_ms >= $2",
        &[&context, &now],
    )?
    .is_some())
}

fn info_row(r: &Row, now: Millis) -> Result<LeaseInfo> {
    let expires: Millis = r.try_get(7)?;
    let ended: Option<Millis> = r.try_get(8)?;
    Ok(LeaseInfo {
        lease_id: r.try_get(0)?,
        context: r.try_get(1)?,
        name: r.try_get(2)?,
        generation: r.try_get(3)?,
        live: ended.is_none() && now <= expires,
        created_at: rfc3339(r.try_get(5)?),
        heartbeat_at: rfc3339(r.try_get(6)?),
        expires_at: rfc3339(expires),
        ended_at: ended.map(rfc3339),
        end_reason: r.try_get(9)?,
        claimed: r.try_get(10)?,
    })
}

const INFO_SQL: &str = "SELECT l.lease_id, l.context, l.name, l.generation, l.ttl_ms, l.created_ms, l.heartbeat_ms,
        l.expires_ms, l.ended_ms, l.end_reason,
        (SELECT COUNT(*) FROM requests r WHERE r.status = 'claimed' AND r.claimed_lease = l.lease_id)::bigint
 FROM leases l";

/// The live (or not-yet-swept) lease of each context, or of one context.
pub fn status(
    c: &mut impl GenericClient,
    context: Option<&str>,
    now: Millis,
) -> Result<Vec<LeaseInfo>> {
    c.query(
        &format!(
            "{INFO_SQL} WHERE l.ended_ms IS NULL AND ($1::text IS NULL OR l.context = $1)
             ORDER BY l.context"
        ),
        &[&context],
    )?
    .iter()
    .map(|r| info_row(r, now))
    .collect()
}

/// One lease by token (live or not), for `provider status --lease`.
pub fn info(c: &mut impl GenericClient, token: &str, now: Millis) -> Result<LeaseInfo> {
    let row = load(c, token)?;
    let r = c.query_one(
        &format!("{INFO_SQL} WHERE l.lease_id = $1"),
        &[&row.lease_id],
    )?;
    info_row(&r, now)
}

/// Return every request claimed by `lease_id` to `pending` (its lease ended).
fn unclaim_all(
    t: &mut Tx<'_>,
    lease_id: i64,
    reason: &str,
    actor: &Actor,
    now: Millis,
) -> Result<Vec<String>> {
    let ids: Vec<String> =
        t.tx.query(
            "UPDATE requests SET status = 'pending', claimed_lease = NULL, claimed_ms = NULL
             WHERE status = 'claimed' AND claimed_lease = $1 RETURNING seq, id",
            &[&lease_id],
        )?
        .iter()
        .map(|r| Ok((r.try_get::<_, i64>(0)?, r.try_get::<_, String>(1)?)))
        .collect::<Result<Vec<_>>>()
        .map(|mut v| {
            // In arrival order, as SQLite releases them.
            v.sort_by_key(|(seq, _)| *seq);
            v.into_iter().map(|(_, id)| id).collect()
        })?;
    for id in &ids {
        events::append(
            t,
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

impl crate::store::driver::LeaseReads for crate::store::postgres::tx::Tx<'_> {}
impl<C: postgres::GenericClient> crate::store::driver::LeaseReads
    for crate::store::postgres::tx::PgRead<'_, C>
{
}
impl crate::store::driver::LeaseStatements for crate::store::postgres::tx::Tx<'_> {}
