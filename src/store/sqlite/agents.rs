//! The agent registry: who may ask.
//!
//! An agent is live while it has not exited, its ttl (if any) has not run out, and its
//! owner (if any) is live. Entering a live id again makes a new instance and ends the old
//! one as `superseded`, so a stale instance can no longer ask. Exiting or expiring ends
//! every agent it owns, transitively. Lineage is stored for the audit and never read to
//! allow or deny anything.

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::events::{self, hex, NewEvent};
use crate::clock::{rfc3339, Millis};
use crate::core::audit::{Actor, EventKind};
use crate::error::{Error, Result};
use crate::protocol::check::{check_id, CallerStatus};
use crate::protocol::AgentRef;
use crate::store::types::{AgentInfo, Entered};

fn new_instance() -> String {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).expect("the OS random source is available");
    hex(&b)
}

/// The live row of `id` at `now`: (instance, owner id), without checking the owner chain.
fn live_row(conn: &Connection, id: &str, now: Millis) -> Result<Option<(String, Option<String>)>> {
    Ok(conn
        .prepare_cached(
            "SELECT instance, owner_id FROM agents
             WHERE agent_id = ?1 AND ended_ms IS NULL AND (expires_ms IS NULL OR expires_ms >= ?2)",
        )?
        .query_row(params![id, now], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Whether `id` is live at `now`, its owner chain included.
pub fn is_live(conn: &Connection, id: &str, now: Millis) -> Result<bool> {
    let mut current = id.to_string();
    for _ in 0..1024 {
        match live_row(conn, &current, now)? {
            None => return Ok(false),
            Some((_, None)) => return Ok(true),
            Some((_, Some(owner))) => current = owner,
        }
    }
    Ok(false)
}

/// Enter the registry. `owner` must be live. Entering a live id again supersedes it.
pub fn enter(
    tx: &Transaction,
    id: &str,
    owner: Option<&str>,
    lineage: Option<&str>,
    ttl_ms: Option<Millis>,
    now: Millis,
) -> Result<Entered> {
    check_id("agent id", id)?;
    let owner_instance = match owner {
        Some(o) => {
            check_id("owner id", o)?;
            if o == id {
                return Err(Error::Invalid("an agent cannot own itself".into()));
            }
            if !is_live(tx, o, now)? {
                return Err(Error::OwnerNotLive(o.to_string()));
            }
            // Ownership must stay a tree: the owner may not be owned, at any depth, by
            // the agent entering (a cycle would make both look not live).
            let mut current = o.to_string();
            for _ in 0..1024 {
                match live_row(tx, &current, now)? {
                    Some((_, Some(up))) if up == id => {
                        return Err(Error::Invalid(format!(
                            "{o:?} is owned (directly or through others) by {id:?}: ownership cannot form a cycle"
                        )))
                    }
                    Some((_, Some(up))) => current = up,
                    _ => break,
                }
            }
            live_row(tx, o, now)?.map(|(inst, _)| inst)
        }
        None => None,
    };
    if ttl_ms.is_some_and(|t| t <= 0) {
        return Err(Error::Invalid("the agent ttl must be positive".into()));
    }
    // The previous instance, if any, becomes stale (its owned agents stay owned by the id).
    tx.execute(
        "UPDATE agents SET ended_ms = ?1, end_reason = 'superseded' WHERE agent_id = ?2 AND ended_ms IS NULL",
        params![now, id],
    )?;
    let instance = new_instance();
    let expires = ttl_ms.map(|t| now.saturating_add(t));
    tx.execute(
        "INSERT INTO agents (agent_id, instance, owner_id, owner_instance, lineage, ttl_ms, entered_ms, heartbeat_ms, expires_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
        params![id, instance, owner, owner_instance, lineage, ttl_ms, now, expires],
    )?;
    events::append(
        tx,
        now,
        NewEvent {
            kind: EventKind::AgentEntered,
            agent_id: Some(id),
            actor: Actor::Agent(id.to_string()),
            data: serde_json::json!({"instance": instance, "owner": owner, "lineage": lineage, "ttlMs": ttl_ms}),
            request_id: None,
            lease_id: None,
        },
    )?;
    Ok(Entered {
        id: id.to_string(),
        instance,
        expires_at: expires.map(rfc3339),
    })
}

/// Extend a live instance's ttl.
pub fn heartbeat(tx: &Transaction, id: &str, instance: &str, now: Millis) -> Result<AgentInfo> {
    let n = tx.execute(
        "UPDATE agents SET heartbeat_ms = ?1, expires_ms = CASE WHEN ttl_ms IS NULL THEN NULL ELSE ?1 + ttl_ms END
         WHERE agent_id = ?2 AND instance = ?3 AND ended_ms IS NULL AND (expires_ms IS NULL OR expires_ms >= ?1)",
        params![now, id, instance],
    )?;
    if n != 1 {
        return Err(Error::AgentNotFound {
            id: id.into(),
            instance: instance.into(),
        });
    }
    let list = list(tx, now, true)?;
    Ok(list
        .into_iter()
        .find(|a| a.id == id && a.instance == instance)
        .expect("the row just updated is live"))
}

/// End `id`/`instance` and, transitively, every agent it owns. Returns the ended ids.
pub fn exit(tx: &Transaction, id: &str, instance: &str, now: Millis) -> Result<Vec<String>> {
    let n = tx.execute(
        "UPDATE agents SET ended_ms = ?1, end_reason = 'exited'
         WHERE agent_id = ?2 AND instance = ?3 AND ended_ms IS NULL",
        params![now, id, instance],
    )?;
    if n != 1 {
        return Err(Error::AgentNotFound {
            id: id.into(),
            instance: instance.into(),
        });
    }
    events::append(
        tx,
        now,
        NewEvent {
            kind: EventKind::AgentExited,
            agent_id: Some(id),
            actor: Actor::Agent(id.to_string()),
            data: serde_json::json!({"instance": instance}),
            request_id: None,
            lease_id: None,
        },
    )?;
    let mut ended = vec![id.to_string()];
    ended.extend(end_owned(tx, id, now)?);
    Ok(ended)
}

/// End everything `owner` owns, transitively, as `owner-ended`.
fn end_owned(tx: &Transaction, owner: &str, now: Millis) -> Result<Vec<String>> {
    let mut ended = Vec::new();
    let mut frontier = vec![owner.to_string()];
    while let Some(o) = frontier.pop() {
        let children: Vec<(String, String)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT agent_id, instance FROM agents WHERE owner_id = ?1 AND ended_ms IS NULL",
            )?;
            let rows = stmt.query_map([&o], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for (child, inst) in children {
            tx.execute(
                "UPDATE agents SET ended_ms = ?1, end_reason = 'owner-ended' WHERE agent_id = ?2 AND instance = ?3",
                params![now, child, inst],
            )?;
            events::append(
                tx,
                now,
                NewEvent {
                    kind: EventKind::AgentEnded,
                    agent_id: Some(&child),
                    actor: Actor::Agent(o.to_string()),
                    data: serde_json::json!({"instance": inst, "reason": "owner-ended"}),
                    request_id: None,
                    lease_id: None,
                },
            )?;
            ended.push(child.clone());
            frontier.push(child);
        }
    }
    Ok(ended)
}

/// End every agent whose ttl ran out at `now`, with what it owns.
pub fn expire_due(tx: &Transaction, now: Millis) -> Result<Vec<String>> {
    let due: Vec<(String, String)> = {
        let mut stmt = tx.prepare_cached(
            "SELECT agent_id, instance FROM agents WHERE ended_ms IS NULL AND expires_ms IS NOT NULL AND expires_ms < ?1",
        )?;
        let rows = stmt.query_map([now], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut ended = Vec::new();
    for (id, inst) in due {
        tx.execute(
            "UPDATE agents SET ended_ms = ?1, end_reason = 'expired' WHERE agent_id = ?2 AND instance = ?3 AND ended_ms IS NULL",
            params![now, id, inst],
        )?;
        events::append(
            tx,
            now,
            NewEvent {
                kind: EventKind::AgentExpired,
                agent_id: Some(&id),
                actor: Actor::Daemon,
                data: serde_json::json!({"instance": inst}),
                request_id: None,
                lease_id: None,
            },
        )?;
        ended.push(id.clone());
        ended.extend(end_owned(tx, &id, now)?);
    }
    Ok(ended)
}

/// The registry's view of an asking agent at `now`, and its lineage for the audit.
pub fn caller_status(
    conn: &Connection,
    agent: &AgentRef,
    now: Millis,
) -> Result<(CallerStatus, Option<String>)> {
    type Found = (
        Option<String>,
        Option<String>,
        Option<Millis>,
        Option<Millis>,
        Option<String>,
    );
    let row: Option<Found> =
        conn.prepare_cached(
            "SELECT owner_id, lineage, expires_ms, ended_ms, end_reason FROM agents WHERE agent_id = ?1 AND instance = ?2",
        )?
        .query_row(params![agent.id, agent.instance], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()?;
    let Some((owner, lineage, expires, ended, reason)) = row else {
        let known = live_row(conn, &agent.id, now)?.is_some();
        let why = if known {
            "a stale instance: the id is live with a newer instance".to_string()
        } else {
            "no such agent in the registry".to_string()
        };
        return Ok((CallerStatus::NotLive { why }, None));
    };
    if ended.is_some() {
        let why = match reason.as_deref() {
            Some("superseded") => "a stale instance: the id was entered again".to_string(),
            Some(r) => format!("it has ended ({r})"),
            None => "it has ended".to_string(),
        };
        return Ok((CallerStatus::NotLive { why }, lineage));
    }
    if expires.is_some_and(|e| now > e) {
        return Ok((
            CallerStatus::NotLive {
                why: "its ttl ran out without a heartbeat".into(),
            },
            lineage,
        ));
    }
    match owner {
        None => Ok((CallerStatus::LiveRoot, lineage)),
        Some(owner) => {
            if is_live(conn, &owner, now)? {
                Ok((CallerStatus::Delegated { owner }, lineage))
            } else {
                Ok((
                    CallerStatus::NotLive {
                        why: format!("its owner {owner:?} is no longer live"),
                    },
                    lineage,
                ))
            }
        }
    }
}

/// The registry; live entries only unless `all`.
pub fn list(conn: &Connection, now: Millis, live_only: bool) -> Result<Vec<AgentInfo>> {
    let mut stmt = conn.prepare(
        "SELECT agent_id, instance, owner_id, lineage, entered_ms, expires_ms, ended_ms, end_reason
         FROM agents WHERE (?1 = 0 OR ended_ms IS NULL) ORDER BY entered_ms DESC, agent_id",
    )?;
    let rows = stmt.query_map([live_only as i64], |r| {
        let expires: Option<Millis> = r.get(5)?;
        let ended: Option<Millis> = r.get(6)?;
        Ok(AgentInfo {
            id: r.get(0)?,
            instance: r.get(1)?,
            owner: r.get(2)?,
            lineage: r.get(3)?,
            live: ended.is_none() && expires.is_none_or(|e| now <= e),
            entered_at: rfc3339(r.get(4)?),
            expires_at: expires.map(rfc3339),
            ended_at: ended.map(rfc3339),
            end_reason: r.get(7)?,
        })
    })?;
    let mut out: Vec<AgentInfo> = rows.collect::<rusqlite::Result<_>>()?;
    // Liveness includes the owner chain.
    for a in &mut out {
        if a.live && a.owner.is_some() {
            a.live = is_live(conn, &a.id, now)?;
        }
    }
    if live_only {
        out.retain(|a| a.live);
    }
    Ok(out)
}

impl crate::store::driver::AgentStatements for crate::store::sqlite::sql::Sql<'_, '_> {}
