//! A channel's side of the deliveries sender: what the loop in
//! [`super::deliveries`] asks of each channel (webhook, mail, Slack). Apart from the loop so
//! a channel's module and the loop that builds it do not import each other.

use crate::core::channel::Channel;
use crate::store::{Delivery, Store};

/// What one attempt met: `Ok` once the channel took the message (a 2xx, a mail server's
/// acceptance), `Err` with why not (the row is tried again after the backoff).
pub type Attempt = std::result::Result<(), String>;

/// One channel: where its contexts' messages go, and one attempt of a delivery.
pub trait Sender: Send {
    /// The channel it sends on.
    fn channel(&self) -> Channel;

    /// The contexts it sends for.
    fn contexts(&self) -> Vec<String>;

    /// Try to send `d` once. Network I/O runs on `rt` (`rt.block_on(…)`); `store` is the
    /// sender's own connection, for what a channel must read or record beside the
    /// outbox, and is called outside `rt` only (a PostgreSQL client runs a runtime of its
    /// own for each call and panics inside another).
    fn send(&self, rt: &tokio::runtime::Runtime, store: &mut Store, d: &Delivery) -> Attempt;
}
