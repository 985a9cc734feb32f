//! The agent registry: enter, heartbeat, exit, list.

use std::time::Duration;

use super::session::duration_ms;
use crate::error::Result;
use crate::store::{Entered, Store};

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
