//! The Slack channel's sender: a delivery of a new request, a reminder or an
//! escalation is posted with `chat.postMessage` to its context's Slack channel as a Block
//! Kit message ([`crate::channels::slack::blocks`]); a delivery of the request's end (answered,
//! expired, cancelled, aborted) changes every message posted for it with `chat.update`,
//! to say who answered and when, with no buttons left.
//!
//! Where each message went (the channel and the message's `ts`) is recorded in the store
//! ([`crate::store::queue::slack`]) keyed by its delivery: a delivery sent again (a crash
//! between the post and the "delivered" mark) finds its message and posts no second one.
//! A message posted after the request ended (its post was retried past the end) shows the
//! end at once.
//!
//! The Web API is reached over HTTPS (rustls, through `hyper-rustls`, trusting the
//! system's CA store as the PostgreSQL connections do) at `--slack-api-url`, by default
//! `https://slack.com/api`; a plain `http://` URL is taken only for a loopback address (a
//! local stand-in or TLS proxy), so the bot token never crosses a network in the clear.
//! An answer Slack gives as an error (`"ok": false`, HTTP 429 with its `Retry-After`, a
//! 5xx) fails the attempt, which the deliveries loop tries again after its backoff.
//!
//! The bot token (`xoxb-…`) is read from a file: the root's `slack.token`, or
//! `--slack-token-file`, which must not be readable by group or others (mode 0600); it is
//! never an argument, an environment variable, a log line or an event.

pub mod blocks;
pub mod interaction;
pub mod interactions;
pub mod mrkdwn;
pub mod signature;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use serde_json::{json, Value};

use crate::channels::sender::{all_of, Attempt, Sender, StoreCalls};
use crate::core::audit::EventKind;
use crate::core::channel::Channel;
use crate::error::{Error, Result};
use crate::host::https::Https;
use crate::root::Root;
use crate::store::{Delivery, RequestRow, Status, Store};
use blocks::{Call, Ended, How, Shown};

/// Slack's Web API, where the daemon reaches it by default.
pub const DEFAULT_API: &str = "https://slack.com/api";

/// The bot token's file in the root.
pub const TOKEN_FILE: &str = "slack.token";

/// What [`TOKEN_FILE`] (or `--slack-token-file`) holds, in messages.
pub const TOKEN_WHAT: &str = "Slack bot token";

/// The signing secret's file in the root.
pub const SIGNING_SECRET_FILE: &str = "slack-signing-secret";

/// What [`SIGNING_SECRET_FILE`] (or `--slack-signing-secret-file`) holds, in messages.
pub const SIGNING_SECRET_WHAT: &str = "Slack signing secret";

/// The Slack channel of a daemon, as configured.
#[derive(Debug, Clone)]
pub struct Slack {
    /// Context → the Slack channel id its messages are posted in (`--slack`).
    pub channels: BTreeMap<String, String>,
    /// The Web API's base URL (`--slack-api-url`), checked by [`parse_api_url`].
    pub api: String,
    /// `--slack-token-file`, else the root's [`TOKEN_FILE`].
    pub token_file: Option<PathBuf>,
    /// `--slack-signing-secret-file`, else the root's [`SIGNING_SECRET_FILE`].
    pub signing_secret_file: Option<PathBuf>,
    /// The page's base URL, for the links to a request (`--slack-page-url`).
    pub page_url: String,
    /// The config file's `[slack.users]`: Slack user id → dshq reviewer.
    pub users: BTreeMap<String, String>,
    /// How long one Web API call may take.
    pub timeout: Duration,
}

impl Slack {
    /// The link to request `id` on the page.
    pub fn link(&self, id: &str) -> String {
        format!("{}/r/{id}", self.page_url)
    }
}

/// Parse `--slack CONTEXT=CHANNEL` ([`crate::channels::target`]): a context id and a
/// Slack channel id (`C0123ABCD`, from the channel's details in Slack).
pub fn parse_slack(s: &str) -> std::result::Result<(String, String), String> {
    let (context, channel) = crate::channels::target::split("slack", s, "default=C0123ABCD")?;
    let b = channel.as_bytes();
    let ok = (2..=32).contains(&b.len())
        && matches!(b[0], b'C' | b'G' | b'D')
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if !ok {
        return Err(format!(
            "{channel:?} is not a Slack channel id: C, G or D and capitals and digits, such as C0123ABCD"
        ));
    }
    Ok((context, channel.to_string()))
}

/// Parse `--slack-api-url`: `https://…`, or `http://` to a loopback address only.
pub fn parse_api_url(s: &str) -> std::result::Result<String, String> {
    let t = s.trim_end_matches('/');
    let uri: hyper::Uri = t.parse().map_err(|e| format!("{s:?} is not a URL: {e}"))?;
    let host = uri.host().ok_or_else(|| format!("{s:?} names no host"))?;
    match uri.scheme_str() {
        Some("https") => Ok(t.to_string()),
        Some("http") if crate::net::is_loopback_host(host) => Ok(t.to_string()),
        _ => Err(format!(
            "{s:?}: give an https:// URL (http:// only to a loopback address: the bot token must not cross a network in the clear)"
        )),
    }
}

/// Parse `--slack-page-url` and `--email-page-url`: the page's base URL as people reach it
/// (`https://dshq.example`), without `|`, `<`, `>`, `&`, a query, a fragment or spaces
/// (paths are appended to it, and it goes into a Slack link as it is).
pub fn parse_page_url(s: &str) -> std::result::Result<String, String> {
    let t = s.trim_end_matches('/');
    let uri: hyper::Uri = t.parse().map_err(|e| format!("{s:?} is not a URL: {e}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return Err(format!("{s:?}: give an http:// or https:// URL"));
    }
    if t.chars().any(|c| {
        matches!(c, '|' | '<' | '>' | '&' | '?' | '#') || c.is_whitespace() || c.is_control()
    }) {
        return Err(format!(
            "{s:?}: a page URL cannot hold |, <, >, &, ?, # or spaces"
        ));
    }
    Ok(t.to_string())
}

/// Read a secret from `path` ([`crate::disk::secret`]'s rule: refused when group or
/// others may read it), refused when missing or empty.
pub fn read_secret_file(path: &Path, what: &str) -> Result<String> {
    let shown = crate::text::path_for_log(path);
    let text = crate::disk::secret::read(path, what)?.ok_or_else(|| {
        Error::Usage(format!(
            "{shown}: no {what} there; write it there (mode 0600) or name its file with the flag"
        ))
    })?;
    let t = text.trim();
    if t.is_empty() {
        return Err(Error::Usage(format!(
            "{shown} is empty: it must hold the {what}"
        )));
    }
    Ok(t.to_string())
}

/// A bot token. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct BotToken(String);

impl std::fmt::Debug for BotToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BotToken(..)")
    }
}

/// A client of Slack's Web API: its base URL, the bot token, an HTTPS client.
pub struct Api {
    base: String,
    token: BotToken,
    client: Client<Https, Full<Bytes>>,
    timeout: Duration,
}

impl Api {
    /// The client of `slack`'s Web API, with the bot token read from its file.
    pub fn new(root: &Root, slack: &Slack) -> Result<Api> {
        let file = slack
            .token_file
            .clone()
            .unwrap_or_else(|| root.dir().join(TOKEN_FILE));
        let token = read_secret_file(&file, TOKEN_WHAT)?;
        if !token.starts_with("xox") || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::Usage(format!(
                "{} does not hold a Slack bot token (xoxb-…)",
                crate::text::path_for_log(&file)
            )));
        }
        Ok(Api {
            base: slack.api.clone(),
            token: BotToken(token),
            client: crate::host::https::client("Slack")?,
            timeout: slack.timeout,
        })
    }

    /// Call Web API `method` with the JSON `body`: Slack's answer when it says `ok`, else
    /// why not (an HTTP error, a rate limit and its `Retry-After`, Slack's `error`).
    pub async fn call(&self, method: &str, body: &Value) -> std::result::Result<Value, String> {
        let request = hyper::Request::post(format!("{}/{method}", self.base))
            .header("content-type", "application/json; charset=utf-8")
            .header("authorization", format!("Bearer {}", self.token.0))
            .header("user-agent", concat!("dshq/", env!("CARGO_PKG_VERSION")))
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| format!("the request cannot be built: {e}"))?;
        let call = async {
            let resp = self
                .client
                .request(request)
                .await
                .map_err(|e| format!("not sent: {}", crate::text::causes(&e)))?;
            let status = resp.status();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(crate::text::for_log)
                .map(|s| s.into_owned());
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("the answer did not arrive: {e}"))?
                .to_bytes();
            if status.as_u16() == 429 {
                return Err(format!(
                    "rate limited by Slack (HTTP 429, Retry-After {})",
                    retry_after.as_deref().unwrap_or("not given")
                ));
            }
            if !status.is_success() {
                return Err(format!("HTTP {}", status.as_u16()));
            }
            let v: Value = serde_json::from_slice(&bytes)
                .map_err(|_| "Slack's answer is not JSON".to_string())?;
            if v["ok"] != json!(true) {
                let e = v["error"].as_str().unwrap_or("no error given");
                return Err(format!("Slack said {}", crate::text::for_log(e)));
            }
            Ok(v)
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(r) => r,
            Err(_) => Err("timed out".into()),
        }
    }
}

/// How request `row` ended, from its row and its events, for the updated message; `None`
/// while it is open.
pub fn end_of(store: &mut Store, row: &RequestRow) -> Result<Option<Ended>> {
    let (how, kinds): (How, &[EventKind]) = match row.status {
        Status::Pending | Status::Claimed | Status::Rejected => return Ok(None),
        Status::Answered if row.decided_by.as_deref() == Some("policy") => (
            How::Expired {
                decided_by_policy: true,
            },
            &[EventKind::Expired],
        ),
        Status::Answered => (How::Answered(row.parsed_answer()), &[EventKind::Answered]),
        Status::Expired => (
            How::Expired {
                decided_by_policy: false,
            },
            &[EventKind::Expired],
        ),
        Status::Cancelled => (How::Cancelled, &[EventKind::Cancelled]),
        Status::Aborted => (How::Aborted, &[EventKind::Aborted]),
    };
    let id = row.id.clone().unwrap_or_default();
    let last = store
        .events(&id)?
        .into_iter()
        .rev()
        .find(|e| e.event_kind().is_some_and(|k| kinds.contains(&k)));
    let at_ms = last
        .as_ref()
        .map(|e| e.at_ms)
        .or(row.finished_ms)
        .unwrap_or(row.created_ms);
    let by = last.map(|e| e.actor).filter(|a| a != "daemon");
    // An abort by the daemon is the request's own deadline passing, not its asker.
    let how = match (how, &by) {
        (How::Aborted, None) => How::Deadline,
        (h, _) => h,
    };
    Ok(Some(Ended { how, by, at_ms }))
}

/// What a delivery of a chat channel (Slack, Teams) does: post a message asking a person,
/// show the request's end in the messages posted, or nothing.
pub enum Step {
    /// Post a message, for this reason.
    Post(Call),
    /// Show the end in every message posted for the request.
    End,
    /// Nothing for a person to see.
    Nothing,
}

/// The step of delivery `d`, by its event's kind.
pub fn step_of(d: &Delivery) -> std::result::Result<Step, String> {
    let kind = EventKind::parse(&d.kind).ok_or_else(|| format!("unknown kind {:?}", d.kind))?;
    Ok(match kind {
        EventKind::Accepted => Step::Post(Call::New),
        EventKind::Reminded => Step::Post(Call::Reminder),
        EventKind::Escalated => {
            let body: Value = serde_json::from_str(&d.body).unwrap_or(Value::Null);
            Step::Post(Call::Escalated(
                body["data"]["from"].as_str().map(str::to_string),
            ))
        }
        EventKind::Answered | EventKind::Expired | EventKind::Cancelled | EventKind::Aborted => {
            Step::End
        }
        _ => Step::Nothing,
    })
}

/// Request `id` and how it ended, read now through the loop's store; `None` when it was
/// pruned since.
pub async fn read_now(
    store: &StoreCalls,
    id: &str,
) -> std::result::Result<Option<(RequestRow, Option<Ended>)>, String> {
    let id = id.to_string();
    store
        .call(move |s| {
            let Some(row) = s.get(&id)? else {
                return Ok(None);
            };
            let end = end_of(s, &row)?;
            Ok(Some((row, end)))
        })
        .await
}

/// The Slack channel's sender.
pub struct SlackSender {
    slack: Slack,
    api: Api,
}

impl SlackSender {
    /// The sender of `slack`, with the bot token read from its file.
    pub fn new(root: &Root, slack: Slack) -> Result<SlackSender> {
        let api = Api::new(root, &slack)?;
        Ok(SlackSender { slack, api })
    }

    /// One attempt of `d`: the store is read and written through the loop's connection
    /// ([`StoreCalls`]), the Web API called in between.
    async fn deliver(&self, store: &StoreCalls, d: &Delivery) -> Attempt {
        match step_of(d)? {
            Step::Post(call) => self.post(store, d, call).await,
            Step::End => self.update(store, d).await,
            Step::Nothing => Ok(()),
        }
    }

    /// The message `f` makes of `d`'s request as `row` holds it, with its link to the page.
    fn render(
        &self,
        d: &Delivery,
        row: &RequestRow,
        f: impl FnOnce(&Shown<'_>) -> Value,
    ) -> std::result::Result<Value, String> {
        let request = row
            .request()
            .ok_or_else(|| format!("request {} does not parse", d.request_id))?;
        let link = self.slack.link(&d.request_id);
        Ok(f(&Shown {
            id: &d.request_id,
            context: &row.context,
            request: &request,
            link: &link,
        }))
    }

    /// This endpoint's Slack channel: the context's.
    fn channel_of(&self, d: &Delivery) -> std::result::Result<&str, String> {
        self.slack
            .channels
            .get(&d.context)
            .map(String::as_str)
            .ok_or_else(|| format!("no Slack channel for context {:?}", d.context))
    }

    async fn post(&self, store: &StoreCalls, d: &Delivery, call: Call) -> Attempt {
        let delivery = d.id.clone();
        if store
            .call(move |s| s.slack_message_of_delivery(&delivery))
            .await?
            .is_some()
        {
            return Ok(());
        }
        let channel = self.channel_of(d)?;
        let Some((row, end)) = read_now(store, &d.request_id).await? else {
            return Ok(());
        };
        let mut body = self.render(d, &row, |shown| match &end {
            None => blocks::message(shown, &call),
            Some(e) => blocks::ended(shown, e),
        })?;
        body["channel"] = json!(channel);
        body["unfurl_links"] = json!(false);
        body["unfurl_media"] = json!(false);
        let answer = self.api.call("chat.postMessage", &body).await?;
        let (Some(posted_in), Some(ts)) = (answer["channel"].as_str(), answer["ts"].as_str())
        else {
            return Err("Slack's answer names no channel and ts".into());
        };
        let (delivery, request, posted_in, ts) = (
            d.id.clone(),
            d.request_id.clone(),
            posted_in.to_string(),
            ts.to_string(),
        );
        store
            .call(move |s| s.record_slack_message(&delivery, &request, &posted_in, &ts))
            .await
            .map(|_| ())
            // Posted, not recorded: tried again, it posts again (a duplicate message,
            // never a lost one), and its end still updates the one recorded.
            .map_err(|e| format!("posted, but not recorded: {e}"))
    }

    /// The end of `d`'s request shown in every message posted for it in this endpoint's
    /// channel (a request escalated from another Slack context has its message there
    /// updated by that context's own delivery of the end).
    async fn update(&self, store: &StoreCalls, d: &Delivery) -> Attempt {
        let channel = self.channel_of(d)?.to_string();
        let id = d.request_id.clone();
        let messages: Vec<_> = store
            .call(move |s| s.slack_messages(&id))
            .await?
            .into_iter()
            .filter(|m| m.channel == channel)
            .collect();
        if messages.is_empty() {
            return Ok(());
        }
        let Some((row, Some(end))) = read_now(store, &d.request_id).await? else {
            return Ok(());
        };
        let content = self.render(d, &row, |shown| blocks::ended(shown, &end))?;
        let mut failed = Vec::new();
        for m in &messages {
            let mut body = content.clone();
            body["channel"] = json!(m.channel);
            body["ts"] = json!(m.ts);
            match self.api.call("chat.update", &body).await {
                Ok(_) => {}
                // Deleted in Slack: there is nothing left to change.
                Err(e) if e.ends_with("message_not_found") => {
                    tracing::info!(id = %d.id, ts = %m.ts, "the Slack message is gone: not updated");
                }
                Err(e) => failed.push(e),
            }
        }
        all_of(&failed, messages.len(), "messages not updated")
    }
}

impl Sender for SlackSender {
    fn channel(&self) -> Channel {
        Channel::Slack
    }

    fn contexts(&self) -> Vec<String> {
        self.slack.channels.keys().cloned().collect()
    }

    fn timeout(&self) -> Duration {
        self.slack.timeout
    }

    fn send<'a>(&'a self, store: &'a StoreCalls, d: &'a Delivery) -> BoxFuture<'a, Attempt> {
        Box::pin(self.deliver(store, d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_as_slack_names_them() {
        assert_eq!(
            parse_slack("ops=C0123ABCD").unwrap(),
            ("ops".to_string(), "C0123ABCD".to_string())
        );
        assert!(parse_slack("ops=#general").is_err());
        assert!(parse_slack("ops").is_err());
        assert!(parse_slack("../x=C1").is_err());
        assert!(parse_api_url("https://slack.com/api/").is_ok());
        assert!(parse_api_url("http://127.0.0.1:9/api").is_ok());
        assert!(parse_api_url("http://[::1]:9/api").is_ok());
        assert!(parse_api_url("http://slack.example/api").is_err());
        assert_eq!(
            parse_page_url("https://dshq.example/").unwrap(),
            "https://dshq.example"
        );
        assert!(parse_page_url("https://x/|evil").is_err());
        assert!(parse_page_url("ftp://x").is_err());
    }

    #[test]
    fn a_secret_file_readable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, "xoxb-1\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_secret_file(&p, "token").unwrap_err().to_string();
        assert!(e.contains("chmod 600") && !e.contains("xoxb"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_secret_file(&p, "token").unwrap(), "xoxb-1");
        assert!(read_secret_file(&dir.path().join("none"), "token").is_err());
        assert_eq!(format!("{:?}", BotToken("xoxb-1".into())), "BotToken(..)");
    }
}
