//! Push notifications: a client's webhook told when its task ends.
//!
//! - **Which webhooks.** Only origins the operator allows (`--a2a-push-allow
//!   http://HOST:PORT`, a port of `*` for any): a webhook is a request this host makes on a
//!   client's word, so without a list there are none (the card says `pushNotifications:
//!   false`, and the push methods answer `-32003`), as A2A's guidance against
//!   server-side request forgery asks. `http://` only, as the webhook channel: an
//!   `https://` receiver is reached through a local TLS proxy.
//! - **Durable.** A configuration is a file, `ROOT/a2a/push/TASK/ID.json` (0600: it holds
//!   the client's credentials), written atomically before the call that made it returns,
//!   and removed only once its notification was taken (2xx). The host watches every task
//!   that has one, from its start too, so a notification owed when the daemon was killed
//!   is sent by the next one: at least once, as A2A asks (a receiver drops a duplicate by
//!   the task id).
//! - **What is sent.** One notification, when the task is final: a `StreamResponse` with
//!   the whole task (its `decision` artifact), `Content-Type: application/a2a+json`, with
//!   the configuration's credentials as A2A 1.0 says: `Authorization: SCHEME CREDENTIALS`
//!   from its `authentication`, and its `token` as `X-A2A-Notification-Token` (the header
//!   the official SDKs send and check).
//! - **Retries.** A failed attempt (no connection, a timeout, not 2xx) is tried again
//!   after 1, 2, 4 ... seconds (at most [`BACKOFF_MAX`]), [`ATTEMPTS`] times; then the
//!   configuration stays on disk and the next start tries again.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};

use super::errors::{Kind, RpcError};
use super::task::Seen;
use super::wire::{PushConfig, StreamResponse};
use crate::host::AppState;
use crate::protocol::check::check_id;
use crate::protocol::Code;

/// The header a configuration's `token` is sent in.
pub const TOKEN_HEADER: &str = "x-a2a-notification-token";

/// The content type of a notification (A2A 1.0's media type).
pub const CONTENT_TYPE: &str = "application/a2a+json";

/// Attempts of one notification before it waits for the next start.
pub const ATTEMPTS: u32 = 8;

/// The longest pause between two attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// How long one attempt may take (A2A recommends 10 to 30 seconds).
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The most configurations one task may have.
pub const MAX_PER_TASK: usize = 8;

/// The longest URL, token or credentials accepted.
const MAX_TEXT: usize = 2048;

/// An origin webhooks may be at: `http://HOST:PORT` (`PORT` `None`: any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    host: String,
    port: Option<u16>,
}

/// Parse `--a2a-push-allow`: `http://HOST:PORT` or `http://HOST:*`, nothing after.
pub fn parse_origin(s: &str) -> Result<Origin, String> {
    let hint = || {
        format!(
            "{s:?}: give http://HOST:PORT (e.g. http://127.0.0.1:9000), or http://HOST:* for \
             any port"
        )
    };
    let rest = s.trim().strip_prefix("http://").ok_or_else(hint)?;
    let (host, port) = rest.rsplit_once(':').ok_or_else(hint)?;
    if host.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err(hint());
    }
    let port = match port {
        "*" => None,
        p => Some(p.parse::<u16>().map_err(|_| hint())?),
    };
    Ok(Origin {
        host: host.to_ascii_lowercase(),
        port,
    })
}

impl Origin {
    fn allows(&self, uri: &hyper::Uri) -> bool {
        let host = uri.host().unwrap_or_default().to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(80);
        host == self.host && self.port.is_none_or(|p| p == port)
    }
}

/// A configuration as kept on disk: the client's, and the token name that made it (only
/// that token reads or deletes it).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    owner: String,
    config: PushConfig,
}

/// The webhooks of this host's tasks.
pub struct Pushes {
    st: AppState,
    allow: Vec<Origin>,
    dir: PathBuf,
    client: Client<HttpConnector, Full<Bytes>>,
    /// The tasks watched now (one watch a task).
    watching: Mutex<HashSet<String>>,
}

impl Pushes {
    /// The webhooks of `st`'s root, to origins `allow`.
    pub fn new(st: &AppState, allow: Vec<Origin>) -> Arc<Pushes> {
        Arc::new(Pushes {
            dir: st.root.dir().join("a2a").join("push"),
            st: st.clone(),
            allow,
            client: Client::builder(TokioExecutor::new()).build_http(),
            watching: Mutex::new(HashSet::new()),
        })
    }

    /// Whether this host sends push notifications at all.
    pub fn enabled(&self) -> bool {
        !self.allow.is_empty()
    }

    /// Watch every task that has a configuration (at the host's start: what a killed
    /// daemon still owed).
    pub fn resume(self: &Arc<Self>) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if check_id("task id", &name).is_ok() {
                self.watch(name);
            }
        }
    }

    /// Refuse (`-32003`) when this host sends no push notifications.
    pub fn check_enabled(&self) -> Result<(), RpcError> {
        if self.enabled() {
            return Ok(());
        }
        Err(RpcError::new(
            Kind::PushNotSupported,
            Code::BadRequest,
            "this agent sends no push notifications: its operator allowed no webhook origin \
             (dshq daemon --a2a-push-allow)",
        ))
    }

    /// Check a configuration before anything is asked or written.
    pub fn check(&self, c: &PushConfig) -> Result<(), RpcError> {
        self.check_enabled()?;
        let long = [Some(&c.url), c.token.as_ref()]
            .into_iter()
            .flatten()
            .chain(
                c.authentication
                    .iter()
                    .flat_map(|a| [Some(&a.scheme), a.credentials.as_ref()])
                    .flatten(),
            )
            .any(|t| t.len() > MAX_TEXT || t.chars().any(char::is_control));
        if long {
            return Err(RpcError::params(format!(
                "a push configuration's url, token and credentials are at most {MAX_TEXT} \
                 bytes, without control characters"
            )));
        }
        if let Some(id) = &c.id {
            check_id("push configuration id", id).map_err(|e| RpcError::params(e.message))?;
        }
        if c.authentication.as_ref().is_some_and(|a| {
            a.scheme.is_empty()
                || !a
                    .scheme
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
        }) {
            return Err(RpcError::params(
                "authentication.scheme is an HTTP auth scheme, such as Bearer",
            ));
        }
        let uri: hyper::Uri = c
            .url
            .parse()
            .map_err(|e| RpcError::params(format!("the webhook url is not a URL: {e}")))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(RpcError::params(
                "the webhook url is an http:// URL (reach an https:// receiver through a local TLS proxy)",
            ));
        }
        if !self.allow.iter().any(|o| o.allows(&uri)) {
            return Err(RpcError::new(
                Kind::InvalidParams,
                Code::Forbidden,
                "the webhook url is not at an origin this agent's operator allows \
                 (dshq daemon --a2a-push-allow)",
            ));
        }
        Ok(())
    }

    fn task_dir(&self, task: &str) -> PathBuf {
        self.dir.join(task)
    }

    fn read_all(&self, task: &str) -> Vec<Stored> {
        let Ok(entries) = std::fs::read_dir(self.task_dir(task)) else {
            return Vec::new();
        };
        let mut out: Vec<Stored> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| {
                let text = crate::disk::secret::read(&e.path(), "an A2A push configuration")
                    .ok()
                    .flatten()?;
                serde_json::from_str(&text).ok()
            })
            .collect();
        out.sort_by(|a, b| a.config.id.cmp(&b.config.id));
        out
    }

    /// Keep configuration `c` of `task` for token `owner` (a new id unless it names one; the
    /// same id again replaces it), and watch the task.
    pub async fn create(
        self: &Arc<Self>,
        owner: &str,
        task: &str,
        mut c: PushConfig,
    ) -> Result<PushConfig, RpcError> {
        self.check(&c)?;
        let id =
            c.id.clone()
                .unwrap_or_else(|| crate::app::ask::generated_id().replacen("ask-", "push-", 1));
        c.id = Some(id.clone());
        c.task_id = Some(task.to_string());
        let stored = Stored {
            owner: owner.to_string(),
            config: c.clone(),
        };
        let me = self.clone();
        let task2 = task.to_string();
        tokio::task::spawn_blocking(move || -> Result<(), RpcError> {
            let have = me.read_all(&task2);
            let replaces = have.iter().any(|s| s.config.id.as_deref() == Some(&id));
            if have
                .iter()
                .any(|s| s.config.id.as_deref() == Some(&id) && s.owner != stored.owner)
            {
                return Err(RpcError::params("that push configuration id is taken"));
            }
            if !replaces && have.len() >= MAX_PER_TASK {
                return Err(RpcError::params(format!(
                    "a task has at most {MAX_PER_TASK} push configurations"
                )));
            }
            let dir = me.task_dir(&task2);
            std::fs::create_dir_all(&dir)
                .map_err(|e| RpcError::from(crate::error::Error::io("A2A push directory", e)))?;
            let bytes = serde_json::to_vec(&stored).expect("a configuration serializes");
            crate::disk::atomic::write_atomic(&dir, &format!("{id}.json"), &bytes, true)
                .map_err(RpcError::from)
        })
        .await
        .map_err(|e| {
            RpcError::from(crate::error::Error::io(
                "A2A push",
                std::io::Error::other(e),
            ))
        })??;
        self.watch(task.to_string());
        Ok(c)
    }

    /// The configurations of `task` that token `owner` made.
    pub async fn list(self: &Arc<Self>, owner: &str, task: &str) -> Vec<PushConfig> {
        let (me, task, owner) = (self.clone(), task.to_string(), owner.to_string());
        tokio::task::spawn_blocking(move || {
            me.read_all(&task)
                .into_iter()
                .filter(|s| s.owner == owner)
                .map(|s| s.config)
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// Remove configuration `id` of `task` (if token `owner` made it; removing one that is
    /// gone is no error, as A2A asks).
    pub async fn delete(
        self: &Arc<Self>,
        owner: &str,
        task: &str,
        id: &str,
    ) -> Result<(), RpcError> {
        let mine = self
            .list(owner, task)
            .await
            .into_iter()
            .any(|c| c.id.as_deref() == Some(id));
        if mine {
            let path = self.task_dir(task).join(format!("{id}.json"));
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(path)).await;
        }
        Ok(())
    }

    /// Watch `task` until it is final, then notify each of its webhooks (once per task at a
    /// time; the watch ends with the host, and the next start resumes it).
    fn watch(self: &Arc<Self>, task: String) {
        {
            let mut w = self.watching.lock().unwrap_or_else(|p| p.into_inner());
            if !w.insert(task.clone()) {
                return;
            }
        }
        let me = self.clone();
        tokio::spawn(async move {
            me.run(&task).await;
            me.watching
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&task);
        });
    }

    async fn run(&self, task: &str) {
        let mut shutdown = self.st.shutdown.clone();
        loop {
            let mut finished = self.st.db.changes().wait_final(task);
            let seen = match super::task::read(&self.st, task).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(task = %crate::text::for_log(task), error = %crate::text::for_log(&e.to_string()), "an A2A push cannot read its task");
                    None
                }
            };
            let Some(seen) = seen else {
                // The task is gone (pruned): nothing will be sent; the configurations go.
                let dir = self.task_dir(task);
                let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
                return;
            };
            if seen.state().is_terminal() {
                self.notify_all(&seen).await;
                return;
            }
            tokio::select! {
                _ = finished.finished() => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }

    async fn notify_all(&self, seen: &Seen) {
        let body =
            serde_json::to_vec(&StreamResponse::Task(seen.task())).expect("a task serializes");
        let task = seen.id();
        for s in self.read_all(task) {
            let id = s.config.id.clone().unwrap_or_default();
            if self.notify(&s.config, &body).await {
                let path = self.task_dir(task).join(format!("{id}.json"));
                let _ = std::fs::remove_file(path);
            }
        }
        // The task's folder goes once it is empty (a configuration not yet sent stays).
        let _ = std::fs::remove_dir(self.task_dir(task));
    }

    /// Send one notification, retrying; whether it was taken.
    async fn notify(&self, c: &PushConfig, body: &[u8]) -> bool {
        let mut shutdown = self.st.shutdown.clone();
        let mut pause = Duration::from_secs(1);
        for attempt in 1..=ATTEMPTS {
            match self.post(c, body).await {
                Ok(()) => {
                    tracing::info!(task = %crate::text::for_log(c.task_id.as_deref().unwrap_or("")), "A2A push notification sent");
                    return true;
                }
                Err(why) => tracing::warn!(
                    task = %crate::text::for_log(c.task_id.as_deref().unwrap_or("")),
                    attempt,
                    why = %crate::text::for_log(&why),
                    "an A2A push notification was not taken"
                ),
            }
            if attempt == ATTEMPTS {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = shutdown.wait_for(|s| *s) => return false,
            }
            pause = (pause * 2).min(BACKOFF_MAX);
        }
        false
    }

    async fn post(&self, c: &PushConfig, body: &[u8]) -> Result<(), String> {
        let mut request = hyper::Request::post(&c.url)
            .header("content-type", CONTENT_TYPE)
            .header("user-agent", concat!("dshq/", env!("CARGO_PKG_VERSION")));
        if let Some(a) = &c.authentication {
            if let Some(cred) = &a.credentials {
                request = request.header("authorization", format!("{} {cred}", a.scheme));
            }
        }
        if let Some(t) = &c.token {
            request = request.header(TOKEN_HEADER, t);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_vec())))
            .map_err(|e| format!("the request cannot be built: {e}"))?;
        match tokio::time::timeout(TIMEOUT, self.client.request(request)).await {
            Ok(Ok(resp)) if resp.status().is_success() => Ok(()),
            Ok(Ok(resp)) => Err(format!("HTTP {}", resp.status().as_u16())),
            Ok(Err(e)) => Err(format!("not sent: {e}")),
            Err(_) => Err("timed out".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_http_host_and_port_or_any_port() {
        let o = parse_origin("http://127.0.0.1:9000").unwrap();
        assert!(o.allows(&"http://127.0.0.1:9000/hook".parse().unwrap()));
        assert!(!o.allows(&"http://127.0.0.1:9001/hook".parse().unwrap()));
        assert!(!o.allows(&"http://127.0.0.2:9000/hook".parse().unwrap()));
        let any = parse_origin("http://Hooks.example:*").unwrap();
        assert!(any.allows(&"http://hooks.example/x".parse().unwrap()));
        for bad in [
            "https://h:1",
            "http://h",
            "http://h:1/path",
            "http://u@h:1",
            "h:1",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
}
