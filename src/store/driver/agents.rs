//! The statements of one concern. Provider-less agents: the registry of asking agents, their instances and ttls.
//!
//! See [`super`] for what a statement is and is not.

use crate::clock::Millis;
use crate::error::Result;

/// One row of the registry, as stored.
#[derive(Debug, Clone)]
pub struct AgentRow {
    /// The agent id.
    pub id: String,
    /// This instance (a new one each time the id enters).
    pub instance: String,
    /// The owning agent id, if delegated.
    pub owner: Option<String>,
    /// Free lineage text kept for the audit.
    pub lineage: Option<String>,
    /// When it entered.
    pub entered_ms: Millis,
    /// When its ttl runs out, if it has one.
    pub expires_ms: Option<Millis>,
    /// When it ended, if it has.
    pub ended_ms: Option<Millis>,
    /// Why it ended (`exited`, `expired`, `owner-ended`, `superseded`).
    pub end_reason: Option<String>,
}

/// The live row of an id (not ended, its ttl not run out), without its owner chain.
#[derive(Debug, Clone)]
pub struct LiveAgentRow {
    /// The live instance.
    pub instance: String,
    /// The owning agent id, if delegated.
    pub owner: Option<String>,
}

/// One instance of an agent: its id and instance.
#[derive(Debug, Clone)]
pub struct AgentInstanceRef {
    /// The agent id.
    pub id: String,
    /// The instance.
    pub instance: String,
}

/// A new instance to insert.
#[derive(Debug, Clone, Copy)]
pub struct NewAgent<'a> {
    /// The agent id.
    pub id: &'a str,
    /// The new instance.
    pub instance: &'a str,
    /// The owning agent id, if delegated.
    pub owner: Option<&'a str>,
    /// The owner's live instance when this one entered.
    pub owner_instance: Option<&'a str>,
    /// Free lineage text kept for the audit.
    pub lineage: Option<&'a str>,
    /// The ttl, if any.
    pub ttl_ms: Option<Millis>,
    /// Entered (and last heartbeat) at.
    pub now: Millis,
    /// When the ttl runs out (`now + ttl`).
    pub expires_ms: Option<Millis>,
}

/// Why an instance ended (`agents.end_reason`), for [`AgentStatements::end_agent_if_not_ended`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentEnd {
    /// The agent exited.
    Exited,
    /// Its ttl ran out without a heartbeat.
    Expired,
    /// Its owner ended.
    OwnerEnded,
}

impl AgentEnd {
    /// The text stored in `agents.end_reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentEnd::Exited => "exited",
            AgentEnd::Expired => "expired",
            AgentEnd::OwnerEnded => "owner-ended",
        }
    }
}

/// The registry's reads, for the rules that also run outside a write (the agents list,
/// the caller's status on ask).
pub trait AgentReads {
    /// The row of `id` not ended and not past its ttl at `now` (owner chain unchecked).
    fn live_agent_row(&mut self, id: &str, now: Millis) -> Result<Option<LiveAgentRow>>;
    /// The row of `id`/`instance`, whatever its state.
    fn agent_instance_row(&mut self, id: &str, instance: &str) -> Result<Option<AgentRow>>;
    /// Every row, or only those not ended when `not_ended_only`; newest entered first, then by id.
    fn agent_rows(&mut self, not_ended_only: bool) -> Result<Vec<AgentRow>>;
}

/// The statements this concern's queue rules need from a write transaction.
pub trait AgentStatements: AgentReads {
    /// End every not-ended instance of `id` as `superseded`.
    fn supersede_not_ended_agent(&mut self, id: &str, now: Millis) -> Result<usize>;
    /// Insert a new instance.
    fn insert_agent(&mut self, agent: NewAgent<'_>) -> Result<()>;
    /// Heartbeat `id`/`instance` (its expiry becomes `now + ttl`) if it is not ended and
    /// not past its ttl; the rows changed.
    fn heartbeat_agent_if_live(&mut self, id: &str, instance: &str, now: Millis) -> Result<usize>;
    /// End `id`/`instance` for `why` if it has not ended; the rows changed.
    fn end_agent_if_not_ended(
        &mut self,
        id: &str,
        instance: &str,
        now: Millis,
        why: AgentEnd,
    ) -> Result<usize>;
    /// The not-ended instances owned by `owner`, oldest entered first, then by id.
    fn not_ended_agents_owned_by(&mut self, owner: &str) -> Result<Vec<AgentInstanceRef>>;
    /// The not-ended instances whose ttl ran out before `now`, earliest expiry first, then by id.
    fn not_ended_agents_expired_before(&mut self, now: Millis) -> Result<Vec<AgentInstanceRef>>;
}
