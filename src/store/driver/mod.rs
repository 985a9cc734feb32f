//! The drivers' side of the queue: the statements a backend must provide, as traits.
//!
//! The queue's rules are written once ([`super::queue`]) over these traits; a backend
//! ([`super::sqlite`], [`super::postgres`]) is a driver: its SQL, its migrations, its
//! connection and locking, and an implementation of each trait here on its transaction.
//! This is the split River makes between its client and `riverdriver`: a method is one
//! statement (or a short fixed sequence of them) named for what it does, with its guard in
//! its name where it has one (`set_answered_if_lease_live`), and it decides nothing: what
//! to do with the rows it returns is the queue's.
//!
//! One trait per concern, in its own file, so the concerns grow apart; [`Statements`] is
//! all of them, the type a queue rule takes (`&mut dyn Statements`). A rule that also runs
//! on reads takes only the read trait it needs (e.g. [`LeaseReads`]), which both a write
//! transaction and a driver's read connection implement.
//!
//! Every method returns [`crate::error::Result`]: a driver maps its database's errors to
//! [`crate::error::Error`] and never panics on what it reads.

pub mod agents;
pub mod answers;
pub mod audit;
pub mod delegation;
pub mod deliveries;
pub mod events;
pub mod feed;
pub mod history;
pub mod inside;
pub mod ladder;
pub mod leases;
pub mod links;
pub mod outbox;
pub mod prune;
pub mod push;
pub mod requests;
pub mod sign_in;
pub mod slack;
pub mod store;
pub mod sweep;
pub mod telegram;
pub mod tokens;

pub use agents::{AgentReads, AgentStatements};
pub use answers::{AnswerReads, AnswerStatements};
pub use audit::AuditReads;
pub use delegation::{DelegationReads, DelegationStatements};
pub use deliveries::{DeliveryReads, DeliveryStatements};
pub use events::{EventReads, EventStatements};
pub use feed::FeedReads;
pub use history::HistoryReads;
pub use inside::ReadsInside;
pub use ladder::LadderStatements;
pub use leases::{LeaseReads, LeaseStatements};
pub use links::{LinkReads, LinkStatements};
pub use outbox::{OutboxReads, OutboxStatements};
pub use prune::PruneStatements;
pub use push::{PushReads, PushStatements};
pub use requests::{RequestReads, RequestStatements};
pub use sign_in::{SignInReads, SignInStatements};
pub use slack::{SlackReads, SlackStatements};
pub use store::{Driver, Reads, Write};
pub use sweep::{SweepReads, SweepStatements};
pub use telegram::{TelegramReads, TelegramStatements};
pub use tokens::{TokenReads, TokenStatements};

/// Every statement a write transaction offers: what a queue rule takes. A write reads
/// what the feeds read too (a rule run inside a write, such as [`super::queue::feed::while_open`]).
pub trait Statements:
    LeaseStatements
    + FeedReads
    + AgentStatements
    + RequestStatements
    + AnswerStatements
    + PruneStatements
    + TokenStatements
    + EventStatements
    + LadderStatements
    + DeliveryStatements
    + SlackStatements
    + TelegramStatements
    + PushStatements
    + LinkStatements
    + SweepStatements
    + OutboxStatements
    + DelegationStatements
    + SignInStatements
{
}

impl<T> Statements for T where
    T: LeaseStatements
        + FeedReads
        + AgentStatements
        + RequestStatements
        + AnswerStatements
        + PruneStatements
        + TokenStatements
        + EventStatements
        + LadderStatements
        + DeliveryStatements
        + SlackStatements
        + TelegramStatements
        + PushStatements
        + LinkStatements
        + SweepStatements
        + OutboxStatements
        + DelegationStatements
        + SignInStatements
        + ?Sized
{
}
