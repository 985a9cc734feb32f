//! The webhook channel: a delivery POSTed to its context's URL, signed as the
//! Standard Webhooks specification describes: the headers `webhook-id` (the delivery id), `webhook-timestamp` (unix seconds) and
//! `webhook-signature` (`v1,` and the base64 of HMAC-SHA256 over `id.timestamp.body`,
//! keyed by the secret: `whsec_` and the base64 of its bytes).
//!
//! The secret is the root's `webhook.key` (mode 0600, beside `audit.key`, created with 32
//! random bytes the first time a daemon with webhooks starts; an operator may write their
//! own `whsec_…` there instead), or, for a context whose receiver is another party, the
//! file `--webhook-secret-file CONTEXT=FILE` names (mode 0600, written by the operator):
//! each receiver then verifies with a key of its own, and one that leaks signs nothing
//! for the others. A secret is read from its file only: never an argument, an environment
//! variable, a log line or an event. A receiver is given its file's content.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use futures_util::future::BoxFuture;
use hmac::{Hmac, Mac};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sha2::Sha256;

use crate::channels::sender::{Attempt, Sender, StoreCalls};
use crate::core::channel::Channel;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::Delivery;

/// The webhook channels of a daemon: one receiver per context.
#[derive(Debug, Clone)]
pub struct Webhooks {
    /// Context → its receiver's URL (`http://`).
    pub urls: BTreeMap<String, hyper::Uri>,
    /// Context → the file holding its receiver's own secret; a context not here signs
    /// with the root's `webhook.key`.
    pub secret_files: BTreeMap<String, PathBuf>,
    /// How long one attempt may take.
    pub timeout: Duration,
}

/// Parse `CONTEXT=URL` ([`crate::channels::target`]): a valid context id and an absolute
/// `http://` URL.
pub fn parse_webhook(s: &str) -> std::result::Result<(String, hyper::Uri), String> {
    let (context, url) =
        crate::channels::target::split("webhook", s, "default=http://127.0.0.1:9000/hook")?;
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        return Err(format!(
            "{url:?}: give an http:// URL (to reach an https:// receiver, send through a \
             local TLS proxy)"
        ));
    }
    Ok((context, uri))
}

/// Parse `CONTEXT=FILE` of `--webhook-secret-file`: the file holding that context's
/// receiver's own secret.
pub fn parse_secret_file(s: &str) -> std::result::Result<(String, PathBuf), String> {
    let (context, file) = crate::channels::target::split(
        "webhook-secret-file",
        s,
        "partner=/etc/dshq/partner.whsec",
    )?;
    Ok((context, PathBuf::from(file)))
}

/// The webhook channel's sender: the URLs, each receiver's secret, an HTTP client.
pub struct WebhookSender {
    hooks: Webhooks,
    /// Context → the secret its receiver verifies with.
    secrets: BTreeMap<String, Secret>,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl WebhookSender {
    /// The sender of `hooks`, signing each context's deliveries with its receiver's own
    /// secret file, or else the root's `webhook.key` (created at the first start when a
    /// context needs it). A secret file missing, unreadable, readable by others or not a
    /// secret stops the start.
    pub fn new(root: &Root, hooks: Webhooks) -> Result<WebhookSender> {
        let mut secrets = BTreeMap::new();
        for (context, file) in &hooks.secret_files {
            secrets.insert(context.clone(), Secret::from_file(file)?);
        }
        if hooks.urls.keys().any(|c| !secrets.contains_key(c)) {
            let root_key = Secret::load_or_create(root.dir())?;
            for c in hooks.urls.keys() {
                secrets.entry(c.clone()).or_insert_with(|| root_key.clone());
            }
        }
        Ok(WebhookSender {
            hooks,
            secrets,
            client: Client::builder(TokioExecutor::new()).build_http(),
        })
    }

    async fn post(&self, d: &Delivery) -> Attempt {
        let uri = self
            .hooks
            .urls
            .get(&d.context)
            .ok_or_else(|| format!("no webhook for context {:?}", d.context))?;
        let sent_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_secs() as i64);
        let secret = self
            .secrets
            .get(&d.context)
            .ok_or_else(|| format!("no webhook secret for context {:?}", d.context))?;
        let signature = secret.sign(&d.id, sent_at, d.body.as_bytes());
        let request = hyper::Request::post(uri.clone())
            .header("content-type", "application/json")
            .header("user-agent", concat!("dshq/", env!("CARGO_PKG_VERSION")))
            .header("webhook-id", &d.id)
            .header("webhook-timestamp", sent_at.to_string())
            .header("webhook-signature", signature)
            .body(Full::new(Bytes::from(d.body.clone())))
            .map_err(|e| format!("the request cannot be built: {e}"))?;
        // Bounded by the deliveries loop: the whole exchange within `timeout`.
        match self.client.request(request).await {
            Ok(resp) if resp.status().is_success() => Ok(()),
            Ok(resp) => Err(format!("HTTP {}", resp.status().as_u16())),
            Err(e) => Err(format!("not sent: {e}")),
        }
    }
}

impl Sender for WebhookSender {
    fn channel(&self) -> Channel {
        Channel::Webhook
    }

    fn contexts(&self) -> Vec<String> {
        self.hooks.urls.keys().cloned().collect()
    }

    fn timeout(&self) -> Duration {
        self.hooks.timeout
    }

    fn send<'a>(&'a self, _store: &'a StoreCalls, d: &'a Delivery) -> BoxFuture<'a, Attempt> {
        Box::pin(self.post(d))
    }
}

/// The secret's file in the root.
pub const KEY_FILE: &str = "webhook.key";

/// What [`KEY_FILE`] holds, in messages.
pub const KEY_WHAT: &str = "webhook signing secret";

/// The secret's prefix.
const PREFIX: &str = "whsec_";

/// A signing secret's key bytes. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// Parse `whsec_` + base64.
    pub fn parse(s: &str) -> Option<Secret> {
        let b = STANDARD.decode(s.trim().strip_prefix(PREFIX)?).ok()?;
        (!b.is_empty()).then_some(Secret(b))
    }

    /// The secret as a receiver is given it (`whsec_` + base64).
    pub fn to_text(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.0))
    }

    /// Read a receiver's own secret from `path` (written by the operator, mode 0600).
    pub fn from_file(path: &Path) -> Result<Secret> {
        let shown = crate::text::path_for_log(path);
        let text = crate::disk::secret::read(path, KEY_WHAT)?.ok_or_else(|| {
            Error::Usage(format!(
                "--webhook-secret-file {shown}: no such file (write whsec_ and the base64 of \
                 at least 24 random bytes there, mode 0600)"
            ))
        })?;
        Secret::parse(&text).ok_or_else(|| {
            Error::Usage(format!(
                "{shown} is not a webhook secret: it must hold whsec_ and base64"
            ))
        })
    }

    /// Read `dir/webhook.key`, creating it (0600, 32 random bytes) when it is missing.
    pub fn load_or_create(dir: &Path) -> Result<Secret> {
        let path = dir.join(KEY_FILE);
        match crate::disk::secret::read(&path, KEY_WHAT)? {
            Some(text) => Secret::parse(&text).ok_or_else(|| {
                Error::Usage(format!(
                    "{} is not a webhook secret: it must hold whsec_ and base64",
                    crate::text::path_for_log(&path)
                ))
            }),
            None => {
                let mut b = vec![0u8; 32];
                getrandom::getrandom(&mut b).map_err(|e| {
                    Error::Invalid(format!("no randomness for the webhook secret: {e}"))
                })?;
                let secret = Secret(b);
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(|e| Error::io(&path, e))?;
                f.write_all(format!("{}\n", secret.to_text()).as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| Error::io(&path, e))?;
                tracing::info!(file = KEY_FILE, "created the webhook signing secret");
                Ok(secret)
            }
        }
    }

    /// The `webhook-signature` header of `body` sent as delivery `id` at `timestamp`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_secret_round_trips_and_signs_id_timestamp_body() {
        let s = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(s.to_text(), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let a = s.sign("msg_1", 1_674_087_231, b"{}");
        assert!(a.starts_with("v1,"), "{a}");
        assert_eq!(a, s.sign("msg_1", 1_674_087_231, b"{}"));
        assert_ne!(a, s.sign("msg_2", 1_674_087_231, b"{}"));
        assert_ne!(a, s.sign("msg_1", 1_674_087_232, b"{}"));
        assert_ne!(a, s.sign("msg_1", 1_674_087_231, b"{ }"));
        assert!(Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_none());
        assert!(Secret::parse("whsec_!!").is_none());
        assert_eq!(format!("{s:?}"), "Secret(..)");
    }

    #[test]
    fn the_key_file_is_created_once_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = Secret::load_or_create(dir.path()).unwrap();
        let b = Secret::load_or_create(dir.path()).unwrap();
        assert_eq!(a.to_text(), b.to_text());
        let mode = fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
