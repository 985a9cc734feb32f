//! The Web Push channel: a request that needs a person (accepted, reminded, escalated)
//! becomes a push message to every device its context's reviewers subscribed from the
//! page, and the notification's actions answer it in one tap where the request allows
//! ([`crate::core::push_action`]).
//!
//! - **Settings** ([`Push`]): the contexts it sends for (`--push`), the VAPID contact, how
//!   long one request to a push service may take, how long an action acts.
//! - **Sender** ([`PushSender`]): for each live subscription whose web token may answer in
//!   the request's context (not revoked, a reviewer's role, bound to no
//!   other context), the message ([`message`]) encrypted to the device (RFC 8291,
//!   `aes128gcm`) and signed with the root's VAPID key (RFC 8292, [`crate::app::push_key`])
//!   by `web-push-native`, POSTed to its endpoint (RFC 8030) over the channels' HTTPS
//!   client. Each device is sent to on its own, all at once, each request bounded by
//!   `--push-timeout` by itself, so a push service that hangs holds back no other device.
//!   A push service's 201 (any 2xx) is the device reached, recorded against the delivery
//!   at once ([`crate::store::queue::push::record_reached`]); 404 or 410 means the device
//!   is gone: its subscription is removed. Anything else (429, 5xx, the device's timeout)
//!   fails the attempt, retried after the backoff to the devices not yet reached only, so
//!   a device that got the message does not get it again; the attempt succeeds once every
//!   live device is reached. The attempt as a whole (its store reads and records beside
//!   the sends) is bounded by twice `--push-timeout` ([`Sender::timeout`]).
//! - **Inbound routes** ([`routes`]): the page subscribes a device, reads the VAPID public
//!   key, and the service worker sends a tapped action back.
//!
//! The page is an installable web app whatever the channels (its manifest and service
//! worker are the page's own: [`crate::web::page::app`]).

pub mod message;
pub mod routes;

use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use web_push_native::jwt_simple::algorithms::ES256KeyPair;

use crate::channels::sender::{all_of, Attempt, Sender, StoreCalls};
use crate::core::channel::Channel;
use crate::core::mail_link::LinkKey;
use crate::core::push_action::{device_of, one_taps, ActionClaims, OneTap};
use crate::error::Result;
use crate::host::https::Https;
use crate::root::Root;
use crate::store::{Delivery, PushSubscription, RequestRow, WebToken};
use crate::text::causes;

/// The Web Push channel's settings.
#[derive(Debug, Clone)]
pub struct Push {
    /// The contexts whose requests are pushed.
    pub contexts: Vec<String>,
    /// The VAPID contact (`mailto:` or `https:`), which push services may use to reach the
    /// operator.
    pub contact: String,
    /// How long one request to a push service may take.
    pub timeout: Duration,
    /// How long a notification's actions act.
    pub action_ttl: Duration,
}

/// Check a `--push-contact`: a `mailto:` address or an `https:` URL, as RFC 8292 asks.
pub fn parse_contact(s: &str) -> std::result::Result<String, String> {
    let t = s.trim();
    let ok = (t.starts_with("mailto:") && t.len() > 7 && t.contains('@'))
        || (t.starts_with("https://") && t.len() > 8);
    if !ok || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "{s:?}: give a mailto: address or an https: URL (RFC 8292's contact)"
        ));
    }
    Ok(t.to_string())
}

/// Whether the web token `t` may answer a request in `context` now.
pub fn answers_in(t: &WebToken, context: &str) -> bool {
    t.answers_in(context)
}

/// The Web Push channel's sender.
pub struct PushSender {
    push: Push,
    vapid: ES256KeyPair,
    links: LinkKey,
    client: Client<Https, Full<Bytes>>,
}

/// What one device's request met.
enum Sent {
    /// The push service took it.
    Taken,
    /// The push service says the subscription is gone (404, 410).
    Gone(u16),
}

impl PushSender {
    /// The sender of `push`, with the root's VAPID key and link key (each made at its first
    /// use).
    pub fn new(root: &Root, push: Push) -> Result<PushSender> {
        Ok(PushSender {
            vapid: crate::app::push_key::load_or_create(root.dir())?,
            links: crate::app::mail_key::load_or_create(root.dir())?,
            client: crate::host::https::client("the push service")?,
            push,
        })
    }

    /// The one-tap actions of `row` for device `s`, each with its signed token.
    fn actions(
        &self,
        d: &Delivery,
        row: &RequestRow,
        s: &PushSubscription,
    ) -> Vec<(OneTap, String)> {
        let (Some(request), Some(digest)) = (row.request(), row.request_digest()) else {
            return Vec::new();
        };
        let action_id = self.links.link_id(&d.id, &format!("push {}", s.endpoint));
        one_taps(&request)
            .into_iter()
            .map(|tap| {
                let token = self.links.sign(&ActionClaims {
                    request_id: d.request_id.clone(),
                    context: row.context.clone(),
                    web_name: s.web_name.clone(),
                    device: device_of(&s.endpoint),
                    digest: digest.clone(),
                    answer: tap.answer.clone(),
                    expires_ms: d.created_ms
                        + self.push.action_ttl.as_millis().min(i64::MAX as u128) as i64,
                    action_id: action_id.clone(),
                    issued_ms: d.created_ms,
                });
                (tap, token)
            })
            .collect()
    }

    /// One encrypted, signed request of `body` to device `s`, bounded by `--push-timeout`.
    async fn send_one(
        &self,
        s: &PushSubscription,
        body: Vec<u8>,
    ) -> std::result::Result<Sent, String> {
        let limit = self.push.timeout;
        tokio::time::timeout(limit, self.request_one(s, body))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "timed out after {}",
                    humantime::format_duration(limit)
                ))
            })
    }

    /// The request of [`Self::send_one`], unbounded.
    async fn request_one(
        &self,
        s: &PushSubscription,
        body: Vec<u8>,
    ) -> std::result::Result<Sent, String> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let endpoint: hyper::Uri = s
            .endpoint
            .parse()
            .map_err(|_| "the subscription's endpoint is no URL".to_string())?;
        let key = b64
            .decode(&s.p256dh)
            .ok()
            .and_then(|k| web_push_native::p256::PublicKey::from_sec1_bytes(&k).ok())
            .ok_or("the subscription's p256dh is no P-256 key")?;
        let auth = b64
            .decode(&s.auth)
            .ok()
            .filter(|a| a.len() == 16)
            .ok_or("the subscription's auth secret is not 16 bytes")?;
        let request = web_push_native::WebPushBuilder::new(
            endpoint,
            key,
            *web_push_native::Auth::from_slice(&auth),
        )
        .with_vapid(&self.vapid, &self.push.contact)
        .build(body)
        .map_err(|e| format!("the message cannot be built: {e}"))?
        .map(|b| Full::new(Bytes::from(b)));
        let resp = self
            .client
            .request(request)
            .await
            .map_err(|e| format!("not sent: {}", causes(&e)))?;
        let status = resp.status().as_u16();
        // Read the answer whole, so the connection can be used again.
        let _ = resp.into_body().collect().await;
        match status {
            200..=299 => Ok(Sent::Taken),
            404 | 410 => Ok(Sent::Gone(status)),
            429 => Err("rate limited by the push service (HTTP 429)".to_string()),
            s => Err(format!("HTTP {s}")),
        }
    }

    /// One attempt of `d`: what it needs from the store is read and recorded through
    /// `store` (on the deliveries loop's thread); the devices not yet reached are sent to
    /// at once, each on its own, and each one reached is recorded as soon as it is.
    async fn deliver(&self, store: &StoreCalls, d: &Delivery) -> Attempt {
        let takes =
            crate::core::audit::EventKind::parse(&d.kind).is_some_and(|k| Channel::Push.takes(k));
        if !takes {
            return Ok(());
        }
        let (id, delivery) = (d.request_id.clone(), d.id.clone());
        let read = store
            .call(move |s| {
                // Pruned since: nothing left to ask.
                let Some(row) = s.get(&id)? else {
                    return Ok(None);
                };
                let reached = s.push_reached(&delivery)?;
                Ok(Some((row, s.tokens()?, s.push_subscriptions()?, reached)))
            })
            .await?;
        let Some((row, tokens, subscriptions, reached)) = read else {
            return Ok(());
        };
        if row.status.is_final() {
            // Over before it went out: nobody needs to be asked.
            return Ok(());
        }
        let Some(request) = row.request() else {
            return Err(format!("request {} does not parse", d.request_id));
        };
        let devices: Vec<PushSubscription> = subscriptions
            .into_iter()
            .filter(|s| {
                tokens
                    .iter()
                    .any(|t| t.name == s.web_name && answers_in(t, &row.context))
            })
            .filter(|s| !reached.contains(&s.endpoint))
            .collect();
        let about = message::About {
            id: &d.request_id,
            context: &row.context,
            kind: &d.kind,
            request: &request,
        };
        let sends = devices.iter().map(|s| {
            let body = message::message(&about, &self.actions(d, &row, s));
            async move {
                let sent = self.send_one(s, body).await;
                if let Ok(Sent::Taken) = sent {
                    // Recorded now, not when the others end: a retry skips this device
                    // even if the attempt is cut short.
                    let (delivery, request, endpoint) =
                        (d.id.clone(), d.request_id.clone(), s.endpoint.clone());
                    store
                        .call(move |st| st.record_push_reached(&delivery, &request, &endpoint))
                        .await?;
                }
                sent
            }
        });
        let outcomes = futures_util::future::join_all(sends).await;
        let mut failed = Vec::new();
        for (s, outcome) in devices.iter().zip(outcomes) {
            match outcome {
                Ok(Sent::Taken) => {}
                Ok(Sent::Gone(status)) => {
                    tracing::info!(person = %crate::text::for_log(&s.person), status, "push: the device is gone; its subscription is removed");
                    let endpoint = s.endpoint.clone();
                    if let Err(e) = store
                        .call(move |st| st.push_unsubscribe(&endpoint, None))
                        .await
                    {
                        tracing::warn!(error = %e, "push: cannot remove a gone subscription");
                    }
                }
                Err(e) => failed.push(e),
            }
        }
        all_of(&failed, devices.len(), "devices not reached")
    }
}

impl Sender for PushSender {
    fn channel(&self) -> Channel {
        Channel::Push
    }

    fn contexts(&self) -> Vec<String> {
        self.push.contexts.clone()
    }

    /// Each device's request is bounded by `--push-timeout` on its own
    /// ([`PushSender::send_one`]); the attempt, with its store calls, by twice that.
    fn timeout(&self) -> Duration {
        self.push.timeout.saturating_mul(2)
    }

    fn send<'a>(&'a self, store: &'a StoreCalls, d: &'a Delivery) -> BoxFuture<'a, Attempt> {
        Box::pin(self.deliver(store, d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contact_is_a_mailto_or_an_https_url() {
        assert!(parse_contact("mailto:ops@example.com").is_ok());
        assert!(parse_contact("https://dshq.example").is_ok());
        assert!(parse_contact("http://dshq.example").is_err());
        assert!(parse_contact("mailto:").is_err());
        assert!(parse_contact("mailto:a@b c").is_err());
    }
}
