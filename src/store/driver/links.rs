//! The statements of one concern. Mail links: which links an answer was sent
//! through (`mail_links_used`), so a link answers once.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::links`].

use crate::clock::Millis;
use crate::error::Result;

/// A link through which an answer is being sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkUse {
    /// The link's id (from its signed claims).
    pub link_id: String,
    /// The request it opened.
    pub request_id: String,
    /// The context it was sent for ([`crate::core::mail_link::sent_for`]).
    pub context: String,
    /// Who it was sent to.
    pub recipient: String,
    /// When it was made ([`crate::core::mail_link::opens`]).
    pub issued_ms: crate::clock::Millis,
    /// The request's digest it was made for, when it binds one (a push action does): the
    /// request must still have it ([`crate::core::mail_link::Refused::Changed`]).
    pub digest: Option<String>,
}

/// The statement the link rule needs from a write transaction.
pub trait LinkStatements {
    /// Record `link` as used at `now` unless it already is; whether this call recorded it.
    fn insert_link_use_if_unused(&mut self, link: &LinkUse, now: Millis) -> Result<bool>;
}

/// The read the page makes before it opens a link.
pub trait LinkReads {
    /// Whether an answer was sent through link `link_id`.
    fn link_used(&mut self, link_id: &str) -> Result<bool>;
}
