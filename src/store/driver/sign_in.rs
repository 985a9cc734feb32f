//! The statements of one concern. The quorum groups a sign-in through the identity
//! provider put each person in: the claims at their latest sign-in decide them, so each
//! sign-in replaces the person's rows, and a vote on a request whose group sign-ins fill
//! reads the voter's row of that group.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::sign_in`].

use crate::clock::Millis;
use crate::error::Result;

/// One person's membership of one quorum group, by a sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInGroup {
    /// The person.
    pub person: String,
    /// The quorum group (`[groups]`).
    pub quorum_group: String,
    /// The provider's subject that signed in.
    pub subject: String,
    /// When that sign-in was, on the store's clock (its `signed-in` event's time).
    pub signed_in_ms: Millis,
}

/// The statements the sign-in rule and a vote need from a write transaction.
pub trait SignInStatements {
    /// Delete every group row of `person`; how many there were.
    fn delete_sign_in_groups_of_person(&mut self, person: &str) -> Result<u64>;

    /// Insert `g`, or update the row of its person and group (two sign-ins at once).
    fn upsert_sign_in_group(&mut self, g: &SignInGroup) -> Result<()>;

    /// The row of `person` in `quorum_group`, if their latest sign-in put them there.
    fn sign_in_group_of_person(
        &mut self,
        person: &str,
        quorum_group: &str,
    ) -> Result<Option<SignInGroup>>;
}

/// The reads of the memberships.
pub trait SignInReads {
    /// The groups `person`'s latest sign-in put them in, by group name.
    fn sign_in_groups_of_person(&mut self, person: &str) -> Result<Vec<SignInGroup>>;
}
