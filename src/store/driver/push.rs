//! The statements of one concern. Web Push subscriptions: the devices a reviewer
//! subscribed from the page, each with its push service's endpoint and the keys its
//! messages are encrypted to, so the sender can reach the person and drop a device its
//! push service says is gone; and the devices each delivery reached, so a retry goes only
//! to the others.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::push`].

use crate::clock::Millis;
use crate::error::Result;

/// One subscribed device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSubscription {
    /// The push service's URL for this device (its key: a device is subscribed once).
    pub endpoint: String,
    /// The web token's name it was subscribed under (a tap acts as `web:NAME`).
    pub web_name: String,
    /// The person of that identity when it subscribed.
    pub person: String,
    /// The device's P-256 public key (base64url, uncompressed point): RFC 8291's `p256dh`.
    pub p256dh: String,
    /// The device's authentication secret (base64url, 16 bytes): RFC 8291's `auth`.
    pub auth: String,
    /// When it was recorded, on the store's clock.
    pub created_ms: Millis,
    /// When the browser said it ends (`expirationTime`), if it said.
    pub expires_ms: Option<Millis>,
}

/// The statements the subscriptions need from a write transaction.
pub trait PushStatements {
    /// Insert `s`, or replace the subscription of its endpoint (a device subscribed again,
    /// perhaps by another person, is theirs now).
    fn upsert_push_subscription(&mut self, s: &PushSubscription) -> Result<()>;

    /// Delete the subscription of `endpoint` (only when `web_name` subscribed it, when
    /// given); whether there was one.
    fn delete_push_subscription(&mut self, endpoint: &str, web_name: Option<&str>) -> Result<bool>;

    /// Record that delivery `delivery_id` (of request `request_id`) reached the device of
    /// `endpoint` at `at`, unless it is recorded already; whether this call recorded it.
    fn insert_push_reached(
        &mut self,
        delivery_id: &str,
        request_id: &str,
        endpoint: &str,
        at: Millis,
    ) -> Result<bool>;
}

/// The reads of the subscriptions.
pub trait PushReads {
    /// Every subscription, oldest first.
    fn push_subscriptions(&mut self) -> Result<Vec<PushSubscription>>;

    /// The subscription of `endpoint`, if any.
    fn push_subscription(&mut self, endpoint: &str) -> Result<Option<PushSubscription>>;

    /// The endpoints delivery `delivery_id` reached, in no particular order.
    fn push_reached(&mut self, delivery_id: &str) -> Result<Vec<String>>;
}
