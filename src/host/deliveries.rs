//! The deliveries sender (issue 29): a thread of its own, with its own tokio runtime and
//! its own store connection, started by the daemon when it has channels (`--webhook`, and
//! the other channels' flags). It never blocks the file loop: it reads the outbox's due
//! rows ([`crate::store::queue::deliveries`]) after their commit, hands each to its
//! channel's [`Sender`] (a webhook signed as Standard Webhooks describes:
//! [`super::webhook`]), marks it delivered once the channel took it, and otherwise records
//! the failed attempt and tries again after an exponential backoff
//! (`--delivery-retry-min`, doubling, at most [`RETRY_MAX`]).
//!
//! The loop is written once for every channel; a channel is only its [`Sender`]: where its
//! contexts' messages go and one attempt. Each row has its own retry state, so a channel
//! that is down holds back no other.
//!
//! What survives a crash: a row is marked delivered only after its channel took it, so a
//! daemon killed mid-delivery sends it again at its next start, with the same delivery id
//! (`webhook-id`): a receiver may see a delivery twice, never lose one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;

use crate::clock::Millis;
use crate::core::channel::Channel;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::{Delivery, Route, Store};

pub use super::webhook::{parse_webhook, Webhooks};

/// The longest wait between two attempts of one delivery.
pub const RETRY_MAX: Duration = Duration::from_secs(600);

/// How often the sender looks for rows committed by others (the CLI, another host).
const POLL: Duration = Duration::from_millis(50);

/// How many due rows one look takes.
const BATCH: usize = 64;

/// The channels of a daemon, as configured (each channel's sender is built from its part
/// at start, by [`spawn`]).
#[derive(Debug, Clone)]
pub struct Channels {
    /// `--webhook`: one URL per context.
    pub webhooks: Option<Webhooks>,
    /// `--email`: mail over SMTP to each context's recipients ([`super::email`]).
    pub email: Option<super::email::Email>,
    /// The wait after a delivery's first failed attempt (doubling after each).
    pub retry_min: Duration,
}

impl Channels {
    /// Whether no channel is configured (the daemon then starts no sender).
    pub fn is_empty(&self) -> bool {
        self.webhooks.is_none() && self.email.is_none()
    }
}

/// What one attempt met: `Ok` once the channel took the message (a 2xx, a mail server's
/// acceptance), `Err` with why not (the row is tried again after the backoff).
pub type Attempt = std::result::Result<(), String>;

/// One channel: where its contexts' messages go, and one attempt of a delivery.
pub trait Sender: Send {
    /// The channel it sends on.
    fn channel(&self) -> Channel;

    /// The contexts it sends for.
    fn contexts(&self) -> Vec<String>;

    /// Try to send `d` once. `store` is the sender's own connection, for what a channel
    /// must read or record beside the outbox.
    fn send<'a>(&'a self, store: &'a mut dyn Store, d: &'a Delivery)
        -> LocalBoxFuture<'a, Attempt>;
}

/// The wait before the attempt after `failed` failed attempts.
pub fn backoff(retry_min: Duration, failed: i64) -> Duration {
    let doublings = failed.clamp(1, 32) as u32 - 1;
    retry_min
        .saturating_mul(1u32.checked_shl(doublings).unwrap_or(u32::MAX))
        .min(RETRY_MAX)
}

/// Start the sender of `channels` on its own thread; it ends soon after `stop` is set.
/// Records the channels' routes first, so their events write delivery rows from now on.
pub fn spawn(
    root: &Root,
    channels: Channels,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>> {
    let mut senders: Vec<Box<dyn Sender>> = Vec::new();
    if let Some(w) = &channels.webhooks {
        senders.push(Box::new(super::webhook::WebhookSender::new(
            root,
            w.clone(),
        )?));
    }
    if let Some(e) = &channels.email {
        senders.push(Box::new(super::email::EmailSender::new(root, e.clone())?));
    }
    let routes: Vec<Route> = senders
        .iter()
        .flat_map(|s| {
            let channel = s.channel();
            s.contexts()
                .into_iter()
                .map(move |context| Route { context, channel })
        })
        .collect();
    let mut store = root.open_store()?;
    store.add_delivery_routes(&routes)?;
    tracing::info!(routes = ?routes.iter().map(|r| format!("{}:{}", r.context, r.channel)).collect::<Vec<_>>(), "deliveries on");
    let root = root.clone();
    let retry_min = channels.retry_min;
    std::thread::Builder::new()
        .name("dshq-deliveries".into())
        .spawn(move || {
            drop(store);
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "the deliveries sender cannot start");
                    return;
                }
            };
            rt.block_on(run(root, senders, routes, retry_min, stop));
        })
        .map_err(|e| Error::io("deliveries thread", e))
}

async fn run(
    root: Root,
    senders: Vec<Box<dyn Sender>>,
    routes: Vec<Route>,
    retry_min: Duration,
    stop: Arc<AtomicBool>,
) {
    let mut store: Option<Box<dyn Store>> = None;
    while !stop.load(Ordering::SeqCst) {
        if store.is_none() {
            match root.open_store() {
                Ok(s) => store = Some(s),
                Err(e) => tracing::warn!(error = %e, "deliveries: cannot open the store"),
            }
        }
        if let Some(s) = store.as_mut() {
            let now = s.clock_now().unwrap_or_else(|_| crate::clock::now_ms());
            match s.deliveries_due(&routes, now, BATCH) {
                Ok(due) => {
                    for d in due {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        let Some(sender) = senders.iter().find(|x| {
                            x.channel() == d.channel && x.contexts().contains(&d.context)
                        }) else {
                            continue;
                        };
                        attempt(&**sender, &mut **s, retry_min, d).await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "deliveries: cannot read the outbox");
                    store = None;
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// One attempt of `d` on `sender`, and its bookkeeping.
async fn attempt(sender: &dyn Sender, store: &mut dyn Store, retry_min: Duration, d: Delivery) {
    let outcome = sender.send(store, &d).await;
    let now: Millis = store.clock_now().unwrap_or_else(|_| crate::clock::now_ms());
    match outcome {
        Ok(()) => {
            if let Err(e) = store.mark_delivered(&d.id, now) {
                // Sent again later, with the same id: the receiver drops the duplicate.
                tracing::warn!(id = %d.id, error = %e, "deliveries: cannot mark delivered");
            } else {
                tracing::info!(id = %d.id, request = %d.request_id, kind = %d.kind, channel = %d.channel, "delivered");
            }
        }
        Err(why) => {
            let wait = backoff(retry_min, d.attempts + 1);
            let next = now + wait.as_millis() as Millis;
            // Where it went (a URL, an address) is not logged: the context and the
            // channel name it.
            tracing::warn!(id = %d.id, context = %d.context, channel = %d.channel, attempt = d.attempts + 1, retry_in = ?wait, error = %why, "delivery failed");
            if let Err(e) = store.mark_delivery_failed(&d.id, next, &why) {
                tracing::warn!(id = %d.id, error = %e, "deliveries: cannot record the failed attempt");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_bound() {
        let m = Duration::from_secs(1);
        assert_eq!(backoff(m, 1), Duration::from_secs(1));
        assert_eq!(backoff(m, 2), Duration::from_secs(2));
        assert_eq!(backoff(m, 4), Duration::from_secs(8));
        assert_eq!(backoff(m, 40), RETRY_MAX);
    }
}
