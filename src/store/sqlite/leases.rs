//! Provider leases: one live provider per context, fenced by an unguessable token.
//!
//! A token is `LEASE_ID.SECRET` where SECRET is 32 bytes from the OS; only its SHA-256 is
//! stored and it is compared in constant time. Every operation authenticates the token
//! and requires the lease to be live at `now` (not ended, `now <= expiresAt`) inside the
//! same immediate transaction as its write, and heartbeat is a conditional update naming
//! the lease id and generation: a stale holder matches no row and gets `LEASE_EXPIRED`.

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::events::{self, hex, NewEvent};
use crate::clock::{rfc3339, Millis};
use crate::core::audit::{Actor, EventKind};
use crate::core::lifecycle::LeaseEnd;
use crate::error::WebHolder;
use crate::error::{Error, Result};
use crate::store::types::{HostMark, Lease, LeaseInfo, Registered, Revoked};

fn new_secret() -> [u8; 32] {
    let mut b = [0u8; 32];
    getrandom::getrandom(&mut b).expect("the OS random source is available");
    b
}

fn split_token(token: &str) -> Option<(i64, &str)> {
    let (id, secret) = token.trim().split_once('.')?;
    let id = id.parse::<i64>().ok()?;
    if secret.len() != 64 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((id, secret))
}

/// Register a provider in `context`. `DUPLICATE_PROVIDER` when a live lease exists (it is
/// kept, never replaced; the error names its holder, since and until when, and how to end
/// it on purpose with [`revoke`]).
pub fn register(
    tx: &Transaction,
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
    let live = tx
        .query_row(
            "SELECT name, created_ms, expires_ms, host_label, host_idle_ms
             FROM leases WHERE context = ?1 AND ended_ms IS NULL",
            [context],
            |r| {
                Ok(Error::DuplicateProvider {
                    context: context.to_string(),
                    name: crate::text::one_line(&r.get::<_, String>(0)?).into_owned(),
                    since: rfc3339(r.get(1)?),
                    expires: rfc3339(r.get(2)?),
                    web: WebHolder::from_columns(r.get(3)?, r.get(4)?),
                })
            },
        )
        .optional()?;
    if let Some(duplicate) = live {
        return Err(duplicate);
    }
    let generation: i64 = tx.query_row(
        "SELECT COALESCE(MAX(generation), 0) + 1 FROM leases WHERE context = ?1",
        [context],
        |r| r.get(0),
    )?;
    let secret = hex(&new_secret());
    let digest = Sha256::digest(secret.as_bytes());
    let expires = now.saturating_add(ttl_ms);
    tx.execute(
        "INSERT INTO leases (context, name, generation, secret_sha256, ttl_ms, created_ms, heartbeat_ms, expires_ms,
                             host_id, host_label, host_idle_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, ?10)",
        params![
            context,
            name,
            generation,
            digest.as_slice(),
            ttl_ms,
            now,
            expires,
            host.map(|h| &h.id),
            host.map(|h| &h.label),
            host.map(|h| h.idle_ms)
        ],
    )?;
    let lease_id = tx.last_insert_rowid();
    events::append(
        tx,
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

struct Row {
    lease_id: i64,
    context: String,
    name: String,
    generation: i64,
    digest: Vec<u8>,
    ttl_ms: Millis,
    expires_ms: Millis,
    ended: Option<String>,
}

fn load(conn: &Connection, token: &str) -> Result<Row> {
    let (id, secret) = split_token(token)
        .ok_or_else(|| Error::LeaseExpired("the token is not a dshq lease token".into()))?;
    let row = conn
        .query_row(
            "SELECT lease_id, context, name, generation, secret_sha256, ttl_ms, expires_ms, end_reason
             FROM leases WHERE lease_id = ?1",
            [id],
            |r| {
                Ok(Row {
                    lease_id: r.get(0)?,
                    context: r.get(1)?,
                    name: r.get(2)?,
                    generation: r.get(3)?,
                    digest: r.get(4)?,
                    ttl_ms: r.get(5)?,
                    expires_ms: r.get(6)?,
                    ended: r.get(7)?,
                })
            },
        )
        .optional()?;
    let unknown = || Error::LeaseExpired("no such lease".into());
    let row = row.ok_or_else(unknown)?;
    let given = Sha256::digest(secret.as_bytes());
    if !bool::from(given.as_slice().ct_eq(&row.digest)) {
        return Err(unknown());
    }
    Ok(row)
}

/// The lease id of `token` when its secret matches, whatever the lease's state (for
/// recognising an operation that lease already made).
pub fn identify(conn: &Connection, token: &str) -> Result<i64> {
    Ok(load(conn, token)?.lease_id)
}

/// Authenticate `token` and require it to be the live lease at `now`.
pub fn authenticate(conn: &Connection, token: &str, now: Millis) -> Result<Lease> {
    let row = load(conn, token)?;
    if let Some(reason) = row.ended {
        if let Some(by) = revoked_by(conn, row.lease_id)? {
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
pub fn heartbeat(tx: &Transaction, token: &str, now: Millis) -> Result<Lease> {
    let mut lease = authenticate(tx, token, now)?;
    let expires = now.saturating_add(lease.ttl_ms);
    let n = tx.execute(
        "UPDATE leases SET heartbeat_ms = ?1, expires_ms = ?2
         WHERE lease_id = ?3 AND generation = ?4 AND ended_ms IS NULL AND expires_ms >= ?1",
        params![now, expires, lease.lease_id, lease.generation],
    )?;
    if n != 1 {
        return Err(Error::LeaseExpired("it is no longer live".into()));
    }
    lease.expires_ms = expires;
    Ok(lease)
}

/// End the lease; its claims go back to `pending`. Releasing an ended lease is not an
/// error (returns `false`); an unknown or forged token is `LEASE_EXPIRED`.
pub fn release(tx: &Transaction, token: &str, now: Millis) -> Result<bool> {
    let row = load(tx, token)?;
    if row.ended.is_some() {
        return Ok(false);
    }
    end(tx, row.lease_id, &row.name, LeaseEnd::Released, now)?;
    Ok(true)
}

/// Who revoked `lease_id` (from its `lease-revoked` event), if it was revoked.
fn revoked_by(conn: &Connection, lease_id: i64) -> Result<Option<String>> {
    let data: Option<String> = conn
        .query_row(
            "SELECT data FROM events WHERE lease_id = ?1 AND kind = ?2 AND request_id IS NULL",
            params![lease_id, EventKind::LeaseRevoked.as_str()],
            |r| r.get(0),
        )
        .optional()?;
    Ok(data.map(|d| {
        serde_json::from_str::<serde_json::Value>(&d)
            .ok()
            .and_then(|v| v["by"].as_str().map(str::to_string))
            .unwrap_or_else(|| "someone".into())
    }))
}

/// End the live lease of `context` on purpose, on behalf of someone other than its holder
/// (`dshq provider revoke`): a `lease-revoked` event records who (`by`) and why; its claims
/// go back to `pending`. The row ends as `released` (the schema knows no other early end);
/// the event tells the two apart, and fencing is the same: the old token is dead.
/// `NO_PROVIDER` when no lease is live in the context.
pub fn revoke(
    tx: &Transaction,
    context: &str,
    by: &str,
    reason: Option<&str>,
    now: Millis,
) -> Result<Revoked> {
    crate::protocol::check::check_id("context", context)?;
    // The caller swept at `now`, so any unended lease here is live.
    let live: Option<(i64, String, i64)> = tx
        .query_row(
            "SELECT lease_id, name, generation FROM leases WHERE context = ?1 AND ended_ms IS NULL",
            [context],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((lease_id, name, generation)) = live else {
        return Err(Error::NoLiveLease(context.to_string()));
    };
    tx.execute(
        "UPDATE leases SET ended_ms = ?1, end_reason = ?2 WHERE lease_id = ?3 AND ended_ms IS NULL",
        params![now, LeaseEnd::Released.as_str(), lease_id],
    )?;
    events::append(
        tx,
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
    let released = unclaim_all(tx, lease_id, "lease revoked", &Actor::Cli, now)?;
    Ok(Revoked {
        context: context.to_string(),
        name,
        generation,
        released,
    })
}

/// End every unended lease held by the host `host_id` (its earlier life's, at its start):
/// each is released as its holder would release it, its claims back to `pending`.
pub fn take_over(tx: &Transaction, host_id: &str, now: Millis) -> Result<Vec<Revoked>> {
    let held: Vec<(i64, String, String, i64)> = {
        let mut stmt = tx.prepare(
            "SELECT lease_id, context, name, generation FROM leases
             WHERE ended_ms IS NULL AND host_id = ?1 ORDER BY lease_id",
        )?;
        let rows = stmt.query_map([host_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut out = Vec::with_capacity(held.len());
    for (lease_id, context, name, generation) in held {
        let released = end(tx, lease_id, &name, LeaseEnd::Released, now)?;
        out.push(Revoked {
            context,
            name,
            generation,
            released,
        });
    }
    Ok(out)
}

/// End a lease for `reason` and return its claims to `pending`; returns the released ids.
/// An expiry is the sweep's doing (the daemon's); a release is the provider's.
fn end(
    tx: &Transaction,
    lease_id: i64,
    name: &str,
    reason: LeaseEnd,
    now: Millis,
) -> Result<Vec<String>> {
    tx.execute(
        "UPDATE leases SET ended_ms = ?1, end_reason = ?2 WHERE lease_id = ?3 AND ended_ms IS NULL",
        params![now, reason.as_str(), lease_id],
    )?;
    let (actor, kind) = match reason {
        LeaseEnd::Expired => (Actor::Daemon, EventKind::LeaseExpired),
        LeaseEnd::Released => (Actor::Provider(name.to_string()), EventKind::LeaseReleased),
    };
    events::append(
        tx,
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
        tx,
        lease_id,
        &format!("lease {}", reason.as_str()),
        &actor,
        now,
    )
}

/// End every lease whose `expiresAt` has passed at `now`; returns each with the request ids
/// that went back to `pending`.
pub fn expire_due(tx: &Transaction, now: Millis) -> Result<Vec<(i64, Vec<String>)>> {
    let due: Vec<(i64, String)> = {
        let mut stmt = tx.prepare_cached(
            "SELECT lease_id, name FROM leases WHERE ended_ms IS NULL AND expires_ms < ?1",
        )?;
        let rows = stmt.query_map([now], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut out = Vec::with_capacity(due.len());
    for (id, name) in due {
        let released = end(tx, id, &name, LeaseEnd::Expired, now)?;
        out.push((id, released));
    }
    Ok(out)
}

/// Whether a provider is live in `context` at `now`.
pub fn live_in(conn: &Connection, context: &str, now: Millis) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM leases WHERE context = ?1 AND ended_ms IS NULL AND expires_ms >= ?2",
        )?
        .exists(params![context, now])?)
}

fn info_row(r: &rusqlite::Row<'_>, now: Millis) -> rusqlite::Result<LeaseInfo> {
    let expires: Millis = r.get(7)?;
    let ended: Option<Millis> = r.get(8)?;
    Ok(LeaseInfo {
        lease_id: r.get(0)?,
        context: r.get(1)?,
        name: r.get(2)?,
        generation: r.get(3)?,
        live: ended.is_none() && now <= expires,
        created_at: rfc3339(r.get(5)?),
        heartbeat_at: rfc3339(r.get(6)?),
        expires_at: rfc3339(expires),
        ended_at: ended.map(rfc3339),
        end_reason: r.get(9)?,
        claimed: r.get(10)?,
    })
}

const INFO_SQL: &str = "SELECT l.lease_id, l.context, l.name, l.generation, l.ttl_ms, l.created_ms, l.heartbeat_ms,
        l.expires_ms, l.ended_ms, l.end_reason,
        (SELECT COUNT(*) FROM requests r WHERE r.status = 'claimed' AND r.claimed_lease = l.lease_id)
 FROM leases l";

/// The live (or not-yet-swept) lease of each context, or of one context.
pub fn status(conn: &Connection, context: Option<&str>, now: Millis) -> Result<Vec<LeaseInfo>> {
    let mut stmt = conn.prepare(&format!(
        "{INFO_SQL} WHERE l.ended_ms IS NULL AND (?1 IS NULL OR l.context = ?1) ORDER BY l.context"
    ))?;
    let rows = stmt.query_map([context], |r| info_row(r, now))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One lease by token (live or not), for `provider status --lease`.
pub fn info(conn: &Connection, token: &str, now: Millis) -> Result<LeaseInfo> {
    let row = load(conn, token)?;
    Ok(conn.query_row(
        &format!("{INFO_SQL} WHERE l.lease_id = ?1"),
        [row.lease_id],
        |r| info_row(r, now),
    )?)
}

/// Return every request claimed by `lease_id` to `pending` (its lease ended).
fn unclaim_all(
    tx: &Transaction,
    lease_id: i64,
    reason: &str,
    actor: &Actor,
    now: Millis,
) -> Result<Vec<String>> {
    let ids: Vec<String> = {
        let mut stmt = tx.prepare_cached(
            "SELECT id FROM requests INDEXED BY requests_claimed WHERE status = 'claimed' AND claimed_lease = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([lease_id], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    tx.execute(
        "UPDATE requests SET status = 'pending', claimed_lease = NULL, claimed_ms = NULL
         WHERE seq IN (SELECT seq FROM requests INDEXED BY requests_claimed WHERE status = 'claimed' AND claimed_lease = ?1)",
        [lease_id],
    )?;
    for id in &ids {
        events::append(
            tx,
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

impl crate::store::driver::LeaseReads for crate::store::sqlite::sql::Sql<'_, '_> {}
impl crate::store::driver::LeaseReads for crate::store::sqlite::sql::SqlRead<'_> {}
impl crate::store::driver::LeaseStatements for crate::store::sqlite::sql::Sql<'_, '_> {}
