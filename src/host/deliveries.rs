//! The deliveries sender (issue 29): a thread of its own, with its own tokio runtime and
//! its own store connection, started by the daemon when `--webhook` names a channel. It
//! never blocks the file loop: it reads the outbox's due rows
//! ([`crate::store::queue::deliveries`]) after their commit, POSTs each to its context's
//! webhook signed as Standard Webhooks describes ([`super::webhook`]), marks it delivered
//! after a 2xx, and otherwise records the failed attempt and tries again after an
//! exponential backoff (`--webhook-retry-min`, doubling, at most [`RETRY_MAX`]).
//!
//! What survives a crash: a row is marked delivered only after its 2xx came back, so a
//! daemon killed mid-delivery sends it again at its next start, with the same delivery id
//! (`webhook-id`): a receiver may see a delivery twice, never lose one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::webhook::Secret;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::{Delivery, Store};

/// The longest wait between two attempts of one delivery.
pub const RETRY_MAX: Duration = Duration::from_secs(600);

/// How often the sender looks for rows committed by others (the CLI, another host).
const POLL: Duration = Duration::from_millis(50);

/// How many due rows one look takes.
const BATCH: usize = 64;

/// The webhook channels of a daemon: one URL per context.
#[derive(Debug, Clone)]
pub struct Webhooks {
    /// Context → its webhook URL (`http://`).
    pub urls: BTreeMap<String, hyper::Uri>,
    /// The wait after a delivery's first failed attempt (doubling after each).
    pub retry_min: Duration,
    /// How long one attempt may take.
    pub timeout: Duration,
}

/// Parse `CONTEXT=URL`: a valid context id and an absolute `http://` URL.
pub fn parse_webhook(s: &str) -> std::result::Result<(String, hyper::Uri), String> {
    let (context, url) = s.split_once('=').ok_or_else(|| {
        format!("{s:?}: give CONTEXT=URL, such as default=http://127.0.0.1:9000/hook")
    })?;
    if !crate::protocol::check::is_valid_id(context) {
        return Err(format!("{context:?} is not a context id"));
    }
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        return Err(format!(
            "{url:?}: give an http:// URL (to reach an https:// receiver, send through a \
             local TLS proxy)"
        ));
    }
    Ok((context.to_string(), uri))
}

/// The wait before the attempt after `failed` failed attempts.
pub fn backoff(retry_min: Duration, failed: i64) -> Duration {
    let doublings = failed.clamp(1, 32) as u32 - 1;
    retry_min
        .saturating_mul(1u32.checked_shl(doublings).unwrap_or(u32::MAX))
        .min(RETRY_MAX)
}

/// Start the sender for `hooks` on its own thread; it ends soon after `stop` is set.
/// Records the channels' contexts first, so their events write delivery rows from now on.
pub fn spawn(
    root: &Root,
    hooks: Webhooks,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>> {
    let secret = Secret::load_or_create(root.dir())?;
    let mut store = root.open_store()?;
    let contexts: Vec<String> = hooks.urls.keys().cloned().collect();
    store.add_delivery_contexts(&contexts)?;
    tracing::info!(contexts = ?contexts, "webhook deliveries on");
    let root = root.clone();
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
            rt.block_on(run(root, hooks, secret, stop));
        })
        .map_err(|e| Error::io("deliveries thread", e))
}

async fn run(root: Root, hooks: Webhooks, secret: Secret, stop: Arc<AtomicBool>) {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let contexts: Vec<String> = hooks.urls.keys().cloned().collect();
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
            match s.deliveries_due(&contexts, now, BATCH) {
                Ok(due) => {
                    for d in due {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        attempt(&client, &mut **s, &hooks, &secret, d).await;
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

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn attempt(
    client: &HttpClient,
    store: &mut dyn Store,
    hooks: &Webhooks,
    secret: &Secret,
    d: Delivery,
) {
    let Some(uri) = hooks.urls.get(&d.context) else {
        return;
    };
    let sent_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_secs() as i64);
    let signature = secret.sign(&d.id, sent_at, d.body.as_bytes());
    let request = hyper::Request::post(uri.clone())
        .header("content-type", "application/json")
        .header("user-agent", concat!("dshq/", env!("CARGO_PKG_VERSION")))
        .header("webhook-id", &d.id)
        .header("webhook-timestamp", sent_at.to_string())
        .header("webhook-signature", signature)
        .body(Full::new(Bytes::from(d.body.clone())));
    let request = match request {
        Ok(r) => r,
        Err(e) => {
            fail(
                store,
                hooks,
                &d,
                &format!("the request cannot be built: {e}"),
            );
            return;
        }
    };
    let outcome = tokio::time::timeout(hooks.timeout, client.request(request)).await;
    let now: Millis = store.clock_now().unwrap_or_else(|_| crate::clock::now_ms());
    match outcome {
        Ok(Ok(resp)) if resp.status().is_success() => {
            if let Err(e) = store.mark_delivered(&d.id, now) {
                // Sent again later, with the same id: the receiver drops the duplicate.
                tracing::warn!(id = %d.id, error = %e, "deliveries: cannot mark delivered");
            } else {
                tracing::info!(id = %d.id, request = %d.request_id, kind = %d.kind, "delivered");
            }
        }
        Ok(Ok(resp)) => fail(
            store,
            hooks,
            &d,
            &format!("HTTP {}", resp.status().as_u16()),
        ),
        Ok(Err(e)) => fail(store, hooks, &d, &format!("not sent: {e}")),
        Err(_) => fail(store, hooks, &d, "timed out"),
    }
}

fn fail(store: &mut dyn Store, hooks: &Webhooks, d: &Delivery, why: &str) {
    let now = store.clock_now().unwrap_or_else(|_| crate::clock::now_ms());
    let wait = backoff(hooks.retry_min, d.attempts + 1);
    let next = now + wait.as_millis() as Millis;
    // The URL is not logged (it may carry a token in its path); the context names it.
    tracing::warn!(id = %d.id, context = %d.context, attempt = d.attempts + 1, retry_in = ?wait, error = %why, "delivery failed");
    if let Err(e) = store.mark_delivery_failed(&d.id, next, why) {
        tracing::warn!(id = %d.id, error = %e, "deliveries: cannot record the failed attempt");
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

    #[test]
    fn a_webhook_is_context_equals_http_url() {
        let (c, u) = parse_webhook("ops=http://127.0.0.1:9/hook").unwrap();
        assert_eq!((c.as_str(), u.path()), ("ops", "/hook"));
        assert!(parse_webhook("ops").is_err());
        assert!(parse_webhook("../x=http://h/").is_err());
        assert!(parse_webhook("ops=https://h/")
            .unwrap_err()
            .contains("http://"));
        assert!(parse_webhook("ops=h/").is_err());
    }
}
