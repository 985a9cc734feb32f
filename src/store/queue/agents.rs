//! The queue rules of one concern, over [`crate::store::driver`]: see [`super`].
//!
//! The agent registry: who may ask. An agent is live while it has not exited, its ttl (if
//! any) has not run out, and its owner (if any) is live. Entering a live id again makes a
//! new instance and ends the old one as `superseded`, so a stale instance can no longer
//! ask. Exiting or expiring ends every agent it owns, transitively. Lineage is stored for
//! the audit and never read to allow or deny anything.

use crate::clock::{rfc3339, Millis};
use crate::core::audit::{Actor, EventKind};
use crate::error::{Error, Result};
use crate::protocol::check::{check_id, CallerStatus};
use crate::protocol::AgentRef;
use crate::store::chain::{hex, NewEvent};
use crate::store::driver::agents::{AgentEnd, AgentReads, NewAgent};
use crate::store::driver::Statements;
use crate::store::types::{AgentInfo, Entered};

/// How deep an owner chain is followed before it is taken as not live.
const MAX_DEPTH: usize = 1024;

fn new_instance() -> Result<String> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b)
        .map_err(|e| Error::Invalid(format!("the OS random source failed: {e}")))?;
    Ok(hex(&b))
}

/// Whether `id` is live at `now`, its owner chain included.
pub fn is_live(db: &mut (impl AgentReads + ?Sized), id: &str, now: Millis) -> Result<bool> {
    let mut current = id.to_string();
    for _ in 0..MAX_DEPTH {
        match db.live_agent_row(&current, now)? {
            None => return Ok(false),
            Some(row) => match row.owner {
                None => return Ok(true),
                Some(owner) => current = owner,
            },
        }
    }
    Ok(false)
}

/// Enter the registry. `owner` must be live. Entering a live id again supersedes it.
pub fn enter(
    db: &mut dyn Statements,
    now: Millis,
    id: &str,
    owner: Option<&str>,
    lineage: Option<&str>,
    ttl_ms: Option<Millis>,
) -> Result<Entered> {
    check_id("agent id", id)?;
    let owner_instance = match owner {
        Some(o) => {
            check_id("owner id", o)?;
            if o == id {
                return Err(Error::Invalid("an agent cannot own itself".into()));
            }
            if !is_live(db, o, now)? {
                return Err(Error::OwnerNotLive(o.to_string()));
            }
            // Ownership must stay a tree: the owner may not be owned, at any depth, by
            // the agent entering (a cycle would make both look not live).
            let mut current = o.to_string();
            for _ in 0..MAX_DEPTH {
                match db.live_agent_row(&current, now)?.and_then(|r| r.owner) {
                    Some(up) if up == id => {
                        return Err(Error::Invalid(format!(
                            "{o:?} is owned (directly or through others) by {id:?}: ownership cannot form a cycle"
                        )))
                    }
                    Some(up) => current = up,
                    None => break,
                }
            }
            db.live_agent_row(o, now)?.map(|r| r.instance)
        }
        None => None,
    };
    if ttl_ms.is_some_and(|t| t <= 0) {
        return Err(Error::Invalid("the agent ttl must be positive".into()));
    }
    // The previous instance, if any, becomes stale (its owned agents stay owned by the id).
    db.supersede_not_ended_agent(id, now)?;
    let instance = new_instance()?;
    let expires = ttl_ms.map(|t| now.saturating_add(t));
    db.insert_agent(NewAgent {
        id,
        instance: &instance,
        owner,
        owner_instance: owner_instance.as_deref(),
        lineage,
        ttl_ms,
        now,
        expires_ms: expires,
    })?;
    db.append_event(
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
pub fn heartbeat(
    db: &mut dyn Statements,
    now: Millis,
    id: &str,
    instance: &str,
) -> Result<AgentInfo> {
    let not_found = || Error::AgentNotFound {
        id: id.into(),
        instance: instance.into(),
    };
    if db.heartbeat_agent_if_live(id, instance, now)? != 1 {
        return Err(not_found());
    }
    list(db, now, true)?
        .into_iter()
        .find(|a| a.id == id && a.instance == instance)
        .ok_or_else(not_found)
}

/// End `id`/`instance` and, transitively, every agent it owns. Returns the ended ids.
pub fn exit(db: &mut dyn Statements, now: Millis, id: &str, instance: &str) -> Result<Vec<String>> {
    if db.end_agent_if_not_ended(id, instance, now, AgentEnd::Exited)? != 1 {
        return Err(Error::AgentNotFound {
            id: id.into(),
            instance: instance.into(),
        });
    }
    db.append_event(
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
    ended.extend(end_owned(db, now, id)?);
    Ok(ended)
}

/// End everything `owner` owns, transitively, as `owner-ended`.
fn end_owned(db: &mut dyn Statements, now: Millis, owner: &str) -> Result<Vec<String>> {
    let mut ended = Vec::new();
    let mut frontier = vec![owner.to_string()];
    while let Some(o) = frontier.pop() {
        for child in db.not_ended_agents_owned_by(&o)? {
            // A guarded end: a writer that lost the race to end it appends nothing.
            if db.end_agent_if_not_ended(&child.id, &child.instance, now, AgentEnd::OwnerEnded)?
                != 1
            {
                continue;
            }
            db.append_event(
                now,
                NewEvent {
                    kind: EventKind::AgentEnded,
                    agent_id: Some(&child.id),
                    actor: Actor::Agent(o.to_string()),
                    data: serde_json::json!({"instance": child.instance, "reason": "owner-ended"}),
                    request_id: None,
                    lease_id: None,
                },
            )?;
            ended.push(child.id.clone());
            frontier.push(child.id);
        }
    }
    Ok(ended)
}

/// End every agent whose ttl ran out at `now`, with what it owns (the sweep's step).
pub fn expire_due(db: &mut dyn Statements, now: Millis) -> Result<Vec<String>> {
    let mut ended = Vec::new();
    for due in db.not_ended_agents_expired_before(now)? {
        if db.end_agent_if_not_ended(&due.id, &due.instance, now, AgentEnd::Expired)? != 1 {
            continue;
        }
        db.append_event(
            now,
            NewEvent {
                kind: EventKind::AgentExpired,
                agent_id: Some(&due.id),
                actor: Actor::Daemon,
                data: serde_json::json!({"instance": due.instance}),
                request_id: None,
                lease_id: None,
            },
        )?;
        ended.push(due.id.clone());
        ended.extend(end_owned(db, now, &due.id)?);
    }
    Ok(ended)
}

/// The registry's view of an asking agent at `now`, and its lineage for the audit.
pub fn caller_status(
    db: &mut (impl AgentReads + ?Sized),
    now: Millis,
    agent: &AgentRef,
) -> Result<(CallerStatus, Option<String>)> {
    let Some(row) = db.agent_instance_row(&agent.id, &agent.instance)? else {
        let why = if db.live_agent_row(&agent.id, now)?.is_some() {
            "a stale instance: the id is live with a newer instance".to_string()
        } else {
            "no such agent in the registry".to_string()
        };
        return Ok((CallerStatus::NotLive { why }, None));
    };
    let lineage = row.lineage;
    if row.ended_ms.is_some() {
        let why = match row.end_reason.as_deref() {
            Some("superseded") => "a stale instance: the id was entered again".to_string(),
            Some(r) => format!("it has ended ({r})"),
            None => "it has ended".to_string(),
        };
        return Ok((CallerStatus::NotLive { why }, lineage));
    }
    if row.expires_ms.is_some_and(|e| now > e) {
        return Ok((
            CallerStatus::NotLive {
                why: "its ttl ran out without a heartbeat".into(),
            },
            lineage,
        ));
    }
    match row.owner {
        None => Ok((CallerStatus::LiveRoot, lineage)),
        Some(owner) => {
            if is_live(db, &owner, now)? {
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

/// The registry at `now`; live entries only when `live_only` (liveness includes the
/// owner chain).
pub fn list(
    db: &mut (impl AgentReads + ?Sized),
    now: Millis,
    live_only: bool,
) -> Result<Vec<AgentInfo>> {
    let mut out = Vec::new();
    for r in db.agent_rows(live_only)? {
        let mut live = r.ended_ms.is_none() && r.expires_ms.is_none_or(|e| now <= e);
        if live && r.owner.is_some() {
            live = is_live(db, &r.id, now)?;
        }
        if live_only && !live {
            continue;
        }
        out.push(AgentInfo {
            id: r.id,
            instance: r.instance,
            owner: r.owner,
            lineage: r.lineage,
            live,
            entered_at: rfc3339(r.entered_ms),
            expires_at: r.expires_ms.map(rfc3339),
            ended_at: r.ended_ms.map(rfc3339),
            end_reason: r.end_reason,
        });
    }
    Ok(out)
}
