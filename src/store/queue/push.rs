//! The rule of Web Push subscriptions: a device is subscribed once (its endpoint is the
//! key; subscribing it again replaces the keys and the person), by a person named at the
//! subscription, and removed when its person unsubscribes it or its push service says it
//! is gone (404, 410). A subscription past the `expirationTime` its browser gave is not
//! sent to ([`live`]).
//!
//! A delivery is sent to each live device on its own; each device its push service took it
//! for is recorded against the delivery ([`record_reached`]), so an attempt retried
//! because another device failed goes only to the devices not yet reached.
//!
//! These rows are the push channel's bookkeeping, like the Slack messages: no event.

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::store::driver::push::{PushReads, PushSubscription};
use crate::store::driver::Statements;

/// The longest endpoint a subscription may have (push services' are about 200 bytes).
pub const ENDPOINT_MAX: usize = 2048;

/// Record `s` (replacing the subscription of its endpoint), checked first.
pub fn subscribe(db: &mut dyn Statements, s: &PushSubscription) -> Result<()> {
    let bad = |why: &str| Err(Error::Invalid(format!("a push subscription {why}")));
    if s.endpoint.is_empty() || s.endpoint.len() > ENDPOINT_MAX {
        return bad(&format!("needs an endpoint of 1 to {ENDPOINT_MAX} bytes"));
    }
    if s.web_name.is_empty() || s.person.is_empty() {
        return bad("names its identity and person");
    }
    if s.p256dh.is_empty() || s.auth.is_empty() {
        return bad("needs its p256dh key and auth secret");
    }
    db.upsert_push_subscription(s)
}

/// Remove the subscription of `endpoint`; whether there was one. `by`: the web identity
/// removing it from the page, which removes only a device it subscribed itself (another's
/// is left as it is, and reported as none); `None`: its push service said it is gone.
pub fn unsubscribe(db: &mut dyn Statements, endpoint: &str, by: Option<&str>) -> Result<bool> {
    db.delete_push_subscription(endpoint, by)
}

/// Record that delivery `delivery_id` of request `request_id` reached the device of
/// `endpoint` (its push service took the message) at `now`; whether this call recorded it
/// (the first record stands). A retry of the delivery skips the devices recorded here.
pub fn record_reached(
    db: &mut dyn Statements,
    now: Millis,
    delivery_id: &str,
    request_id: &str,
    endpoint: &str,
) -> Result<bool> {
    if endpoint.is_empty() {
        return Err(Error::Invalid(format!(
            "a device reached by delivery {delivery_id} needs its endpoint"
        )));
    }
    db.insert_push_reached(delivery_id, request_id, endpoint, now)
}

/// The subscriptions still live at `now` (none past its browser's expiry).
pub fn live(db: &mut dyn PushReads, now: Millis) -> Result<Vec<PushSubscription>> {
    Ok(db
        .push_subscriptions()?
        .into_iter()
        .filter(|s| s.expires_ms.is_none_or(|e| e > now))
        .collect())
}

/// The subscription of `endpoint`, when it is live at `now`.
pub fn of_endpoint(
    db: &mut dyn PushReads,
    endpoint: &str,
    now: Millis,
) -> Result<Option<PushSubscription>> {
    Ok(db
        .push_subscription(endpoint)?
        .filter(|s| s.expires_ms.is_none_or(|e| e > now)))
}
