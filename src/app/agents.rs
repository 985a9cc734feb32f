//! The agent registry: enter, heartbeat, exit, list.

use std::time::Duration;

use super::session::duration_ms;
use crate::error::Result;
use crate::store::{AgentInfo, Entered, Store};

/// Enter the registry (a new instance each time).
pub fn enter(
    store: &mut Store,
    id: &str,
    owner: Option<&str>,
    lineage: Option<&str>,
    ttl: Option<Duration>,
) -> Result<Entered> {
    store.agent_enter(id, owner, lineage, ttl.map(duration_ms))
}

/// Extend a live agent's ttl.
pub fn heartbeat(store: &mut Store, id: &str, instance: &str) -> Result<AgentInfo> {
    store.agent_heartbeat(id, instance)
}

/// Exit, with every agent it owns; returns the ended ids.
pub fn exit(store: &mut Store, id: &str, instance: &str) -> Result<Vec<String>> {
    store.agent_exit(id, instance)
}

/// The registry (live agents only, or all).
pub fn list(store: &mut Store, live_only: bool) -> Result<Vec<AgentInfo>> {
    store.agents(live_only)
}
