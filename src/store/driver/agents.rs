//! The statements of one concern. Provider-less agents: the registry of asking agents, their instances and ttls.
//!
//! See [`super`] for what a statement is and is not.

/// The statements this concern's queue rules need from a write transaction.
pub trait AgentStatements {}
