//! A channel's side of the deliveries sender: what the loop in [`super::deliveries`] asks
//! of each channel (webhook, mail, Slack, and any later one). Apart from the loop, so a
//! channel's module and the loop that builds it do not import each other.
//!
//! An attempt is a future: the loop runs each endpoint's deliveries in a task of its own
//! on the deliveries' runtime and bounds every attempt by the channel's
//! [`Sender::timeout`], so a server that accepts a connection and never answers holds
//! back only its own endpoint's deliveries, and a stop drops the attempts in flight
//! (their rows stay undelivered and go out at the next start). A channel that must read
//! or record something in the store beside the outbox does it through [`StoreCalls`]:
//! the store is synchronous (a PostgreSQL client runs a runtime of its own for each call
//! and panics inside another), so its calls run on the loop's thread, never in a task.

use std::sync::mpsc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::core::channel::Channel;
use crate::store::{Delivery, Store};

/// What one attempt met: `Ok` once the channel took the message (a 2xx, a mail server's
/// acceptance), `Err` with why not (the row is tried again after the backoff).
pub type Attempt = std::result::Result<(), String>;

/// The attempt of a delivery that went to several places (a request's messages, a
/// context's devices): done when none failed, else failed, saying how many of `of` and the
/// first reason (the retry goes to the places not yet done).
pub fn all_of(failed: &[String], of: usize, what: &str) -> Attempt {
    match failed.first() {
        None => Ok(()),
        Some(e) => Err(format!("{} of {of} {what}: {e}", failed.len())),
    }
}

/// One channel: where its contexts' messages go, and one attempt of a delivery.
///
/// An endpoint is one context of one channel (a webhook URL, a context's mail, a Slack
/// channel): each has its own task, which sends its deliveries one after the other, in
/// the order they fell due.
pub trait Sender: Send + Sync + 'static {
    /// The channel it sends on.
    fn channel(&self) -> Channel;

    /// The contexts it sends for.
    fn contexts(&self) -> Vec<String>;

    /// The most one attempt may take, from its first byte to its end (connecting, every
    /// read and write, the whole exchange): the loop drops an attempt still running then
    /// and counts it failed. The channel's timeout flag.
    fn timeout(&self) -> Duration;

    /// Try to send `d` once, on the deliveries' runtime; `store` reaches the sender's
    /// store connection.
    fn send<'a>(&'a self, store: &'a StoreCalls, d: &'a Delivery) -> BoxFuture<'a, Attempt>;
}

/// What wakes the loop.
pub(super) enum Wake {
    /// A commit to the store, perhaps (a hint).
    Commit,
    /// An endpoint's attempt of a delivery ended.
    Done(Box<Delivery>, Attempt),
    /// A channel's call on the store ([`StoreCalls`]).
    Call(StoreCall),
}

/// A call on the store, run on the loop's thread with its connection (`None` while it
/// has none).
pub(super) type StoreCall = Box<dyn FnOnce(Option<&mut Store>) + Send>;

/// How a channel's attempt reaches the store: each call runs on the deliveries loop's
/// thread, with its connection, and its result comes back to the task.
#[derive(Clone)]
pub struct StoreCalls(mpsc::Sender<Wake>);

impl StoreCalls {
    pub(super) fn new(to_loop: mpsc::Sender<Wake>) -> StoreCalls {
        StoreCalls(to_loop)
    }

    /// Run `f` on the store; an error (the store's, or no store) is the attempt's, as
    /// text.
    pub async fn call<T, F>(&self, f: F) -> std::result::Result<T, String>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> crate::error::Result<T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let call: StoreCall = Box::new(move |store| {
            let out = match store {
                Some(s) => f(s).map_err(|e| format!("the store: {e}")),
                None => Err("the store cannot be opened".to_string()),
            };
            let _ = tx.send(out);
        });
        self.0
            .send(Wake::Call(call))
            .map_err(|_| "the deliveries loop has ended".to_string())?;
        rx.await
            .map_err(|_| "the deliveries loop has ended".to_string())?
    }
}
