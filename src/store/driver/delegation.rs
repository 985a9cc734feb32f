//! The statements of one concern. Away notices: the person away, their delegate, when it
//! ends; one row per person (a new notice replaces it).
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::delegation`].

use crate::clock::Millis;
use crate::core::delegation::Away;
use crate::error::Result;

/// The statements the away notices need from a write transaction (their reads too: a
/// notice is checked inside the write it governs, an answer for someone).
pub trait DelegationStatements {
    /// Insert `a`, or replace the notice of its person.
    fn upsert_away(&mut self, a: &Away) -> Result<()>;

    /// Delete the notice of `person`; the one deleted.
    fn delete_away(&mut self, person: &str) -> Result<Option<Away>>;

    /// Delete the notices whose end is at or before `now`; the ones deleted.
    fn delete_aways_ended(&mut self, now: Millis) -> Result<Vec<Away>>;

    /// Every notice recorded (ended ones not yet swept too), by person.
    fn aways_in_write(&mut self) -> Result<Vec<Away>>;

    /// The name and role of each web token not revoked: who a delegate may be known as.
    fn live_token_roles(&mut self) -> Result<Vec<(String, String)>>;
}

/// The reads of the away notices.
pub trait DelegationReads {
    /// Every notice recorded (ended ones not yet swept too), by person.
    fn aways(&mut self) -> Result<Vec<Away>>;
}
