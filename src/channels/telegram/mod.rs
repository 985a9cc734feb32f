//! The Telegram channel's sender: a delivery of a new request, a reminder or an escalation
//! is sent with the Bot API's `sendMessage` to each chat of its context
//! ([`crate::core::telegram::Settings::chats`]), as HTML ([`message`]) with an inline
//! keyboard: one button per option, or Approve and Deny, where one press is a whole
//! answer, and a URL button to the request on the page. A delivery of the request's end
//! (answered, expired, cancelled, aborted) edits every message sent for it in this
//! context's chats with `editMessageText`, saying how it ended, its buttons removed.
//!
//! Where each message went (the chat and its message id) and the request's digest then
//! are recorded in the store ([`crate::store::queue::telegram`]) keyed by its delivery and
//! chat: a delivery sent again (a crash between the send and the "delivered" mark) finds
//! its message and sends no second one to that chat. A press of a button is judged
//! against that record ([`webhook`]).
//!
//! The Bot API is reached over HTTPS (the one client setup, [`crate::host::https`]) at the
//! table's `api-url`, by default `https://api.telegram.org`; a plain `http://` URL is
//! taken only for a loopback address (a local stand-in or proxy). The bot token is part
//! of every call's path (`/botTOKEN/METHOD`, as Telegram requires), so the URL is never
//! logged and never part of an error; the token is read from a file (the table's
//! `bot-token-file`, else the root's [`TOKEN_FILE`]) that group and others may not read
//! (mode 0600), never an argument, a variable, a log line or an event. An answer Telegram
//! gives as an error (`"ok": false`, HTTP 429 with its `retry_after`, a 5xx) fails the
//! attempt, which the deliveries loop tries again after its backoff.

pub mod message;
pub mod webhook;

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::BoxFuture;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use serde_json::{json, Value};

use crate::channels::sender::{all_of, Attempt, Sender, StoreCalls};
use crate::channels::slack::blocks::{Call, Ended};
use crate::core::audit::EventKind;
use crate::core::channel::Channel;
use crate::core::telegram::Settings;
use crate::error::{Error, Result};
use crate::host::https::Https;
use crate::root::Root;
use crate::store::driver::telegram::TelegramMessage;
use crate::store::{Delivery, RequestRow};

/// The bot token's file in the root.
pub const TOKEN_FILE: &str = "telegram.token";

/// What [`TOKEN_FILE`] (or `bot-token-file`) holds, in messages.
pub const TOKEN_WHAT: &str = "Telegram bot token";

/// The webhook's secret token's file in the root.
pub const SECRET_TOKEN_FILE: &str = "telegram-secret-token";

/// The most bytes of a Bot API answer read (a Message is a few KB).
const ANSWER_MAX: usize = 1 << 20;

/// What [`SECRET_TOKEN_FILE`] (or `secret-token-file`) holds, in messages.
pub const SECRET_TOKEN_WHAT: &str = "Telegram webhook secret token";

/// The Telegram channel of a daemon: the config file's `[telegram]` and the page's URL.
#[derive(Debug, Clone)]
pub struct Telegram {
    /// The table's settings.
    pub settings: Settings,
    /// The page's base URL, for the "Open on the page" buttons: `page-url`, else the
    /// daemon's `--listen`.
    pub page_url: String,
}

impl Telegram {
    /// The link to request `id` on the page.
    pub fn link(&self, id: &str) -> String {
        format!("{}/r/{}", self.page_url, crate::html::urlencode(id))
    }

    /// The chats of `context`.
    pub fn chats_of(&self, context: &str) -> &[i64] {
        self.settings
            .chats
            .get(context)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// A bot token (`123456:ABC…`). Its `Debug` shows nothing of it.
#[derive(Clone)]
struct BotToken(String);

impl std::fmt::Debug for BotToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BotToken(..)")
    }
}

/// Whether `t` has the shape of a bot token: the bot's id, `:`, and letters, digits, `_`
/// and `-` (it goes into a URL's path as it is).
fn is_bot_token(t: &str) -> bool {
    let Some((id, secret)) = t.split_once(':') else {
        return false;
    };
    !id.is_empty()
        && id.bytes().all(|b| b.is_ascii_digit())
        && secret.len() >= 20
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Why a Bot API call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// Telegram's `error_code` (the HTTP status), 0 when no answer came.
    pub code: u16,
    /// What went wrong, for the log (never the URL, never the token).
    pub text: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A client of the Bot API: its base URL, the bot token, an HTTPS client.
pub struct Api {
    base: String,
    token: BotToken,
    client: Client<Https, Full<Bytes>>,
    timeout: Duration,
}

impl Api {
    /// The client of `t`'s Bot API, with the bot token read from its file.
    pub fn new(root: &Root, t: &Telegram) -> Result<Api> {
        let file = t
            .settings
            .bot_token_file
            .clone()
            .unwrap_or_else(|| root.dir().join(TOKEN_FILE));
        let token = crate::channels::slack::read_secret_file(&file, TOKEN_WHAT)?;
        if !is_bot_token(&token) {
            return Err(Error::Usage(format!(
                "{} does not hold a Telegram bot token (the bot's id, ':', and the secret BotFather gave)",
                crate::text::path_for_log(&file)
            )));
        }
        Ok(Api {
            base: t.settings.api_url.clone(),
            token: BotToken(token),
            client: crate::host::https::client("Telegram")?,
            timeout: t.settings.timeout,
        })
    }

    /// Call Bot API `method` with the JSON `body`: the `result` when Telegram says `ok`,
    /// else why not.
    pub async fn call(&self, method: &str, body: &Value) -> std::result::Result<Value, ApiError> {
        let fail = |code: u16, text: String| ApiError { code, text };
        let request = hyper::Request::post(format!("{}/bot{}/{method}", self.base, self.token.0))
            .header("content-type", "application/json")
            .header("user-agent", concat!("dshq/", env!("CARGO_PKG_VERSION")))
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|_| fail(0, format!("{method}: the request cannot be built")))?;
        let resp = crate::host::https::exchange(&self.client, request, self.timeout, ANSWER_MAX)
            .await
            // The token is in the URL: never in an error, whatever a layer below wrote.
            .map_err(|e| fail(0, format!("{method}: {}", e.replace(&self.token.0, "…"))))?;
        let status = resp.status().as_u16();
        let v: Value = serde_json::from_slice(resp.body()).map_err(|_| {
            fail(
                status,
                format!("{method}: HTTP {status}, and the answer is not JSON"),
            )
        })?;
        if v["ok"] == json!(true) && (200..300).contains(&status) {
            return Ok(v["result"].clone());
        }
        let code = v["error_code"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(status);
        let description = v["description"].as_str().unwrap_or("no description given");
        let retry = v["parameters"]["retry_after"]
            .as_u64()
            .map(|s| format!(" (retry after {s}s)"))
            .unwrap_or_default();
        Err(fail(
            code,
            format!(
                "{method}: Telegram said {code} {}{retry}",
                crate::text::for_log(description)
            ),
        ))
    }
}

/// The Telegram channel's sender.
pub struct TelegramSender {
    telegram: Telegram,
    api: Api,
}

impl TelegramSender {
    /// The sender of `telegram`, with the bot token read from its file.
    pub fn new(root: &Root, telegram: Telegram) -> Result<TelegramSender> {
        let api = Api::new(root, &telegram)?;
        Ok(TelegramSender { telegram, api })
    }

    /// One attempt of `d`.
    async fn deliver(&self, store: &StoreCalls, d: &Delivery) -> Attempt {
        let kind = EventKind::parse(&d.kind).ok_or_else(|| format!("unknown kind {:?}", d.kind))?;
        let call = match kind {
            EventKind::Accepted => Call::New,
            EventKind::Reminded => Call::Reminder,
            EventKind::Escalated => {
                let body: Value = serde_json::from_str(&d.body).unwrap_or(Value::Null);
                Call::Escalated(body["data"]["from"].as_str().map(str::to_string))
            }
            EventKind::Answered
            | EventKind::Expired
            | EventKind::Cancelled
            | EventKind::Aborted => return self.edit(store, d).await,
            _ => return Ok(()),
        };
        self.send_to_chats(store, d, call).await
    }

    /// The request of `d` and how it ended, read now (`None`: pruned since).
    async fn read(
        store: &StoreCalls,
        d: &Delivery,
    ) -> std::result::Result<Option<(RequestRow, Option<Ended>)>, String> {
        let id = d.request_id.clone();
        store
            .call(move |s| {
                let Some(row) = s.get(&id)? else {
                    return Ok(None);
                };
                let end = crate::channels::slack::end_of(s, &row)?;
                Ok(Some((row, end)))
            })
            .await
    }

    /// Send `d`'s message to each chat of its context that has none of it recorded.
    async fn send_to_chats(&self, store: &StoreCalls, d: &Delivery, call: Call) -> Attempt {
        let chats = self.telegram.chats_of(&d.context).to_vec();
        if chats.is_empty() {
            return Err(format!("no Telegram chat for context {:?}", d.context));
        }
        let Some((row, end)) = Self::read(store, d).await? else {
            return Ok(());
        };
        let request = row
            .request()
            .ok_or_else(|| format!("request {} does not parse", d.request_id))?;
        let digest = row
            .request_digest()
            .ok_or_else(|| format!("request {} has no digest", d.request_id))?;
        let link = self.telegram.link(&d.request_id);
        let shown = message::Shown {
            id: &d.request_id,
            context: &row.context,
            request: &request,
            link: &link,
        };
        let mut body = match &end {
            None => message::asking(&shown, &call, &d.id),
            Some(e) => message::ended(&shown, e),
        };
        let mut failed = Vec::new();
        for chat in chats {
            let (delivery, c) = (d.id.clone(), chat);
            if store
                .call(move |s| s.telegram_message_of_delivery(&delivery, c))
                .await?
                .is_some()
            {
                continue;
            }
            body["chat_id"] = json!(chat);
            let sent = match self.api.call("sendMessage", &body).await {
                Ok(m) => m,
                Err(e) => {
                    failed.push(e.text);
                    continue;
                }
            };
            let (Some(chat_id), Some(message_id)) =
                (sent["chat"]["id"].as_i64(), sent["message_id"].as_i64())
            else {
                failed.push("sendMessage's answer names no chat and message_id".into());
                continue;
            };
            let m = TelegramMessage {
                delivery_id: d.id.clone(),
                chat_id,
                message_id,
                request_id: d.request_id.clone(),
                digest: digest.clone(),
                posted_ms: 0,
            };
            // Sent, not recorded: tried again, it sends again (a duplicate message, never
            // a lost one).
            if let Err(e) = store.call(move |s| s.record_telegram_message(&m)).await {
                failed.push(format!("sent, but not recorded: {e}"));
            }
        }
        match failed.first() {
            None => Ok(()),
            Some(e) => Err(format!("{} chat(s) not sent to: {e}", failed.len())),
        }
    }

    /// The end of `d`'s request shown in every message sent for it to this context's
    /// chats (a request escalated from another context has its messages there edited by
    /// that context's own delivery of the end, [`Channel::tells_former`]).
    async fn edit(&self, store: &StoreCalls, d: &Delivery) -> Attempt {
        let chats: BTreeMap<i64, ()> = self
            .telegram
            .chats_of(&d.context)
            .iter()
            .map(|c| (*c, ()))
            .collect();
        let id = d.request_id.clone();
        let messages: Vec<_> = store
            .call(move |s| s.telegram_messages(&id))
            .await?
            .into_iter()
            .filter(|m| chats.contains_key(&m.chat_id))
            .collect();
        if messages.is_empty() {
            return Ok(());
        }
        let Some((row, Some(end))) = Self::read(store, d).await? else {
            return Ok(());
        };
        let request = row
            .request()
            .ok_or_else(|| format!("request {} does not parse", d.request_id))?;
        let link = self.telegram.link(&d.request_id);
        let content = message::ended(
            &message::Shown {
                id: &d.request_id,
                context: &row.context,
                request: &request,
                link: &link,
            },
            &end,
        );
        let mut failed = Vec::new();
        for m in &messages {
            let mut body = content.clone();
            body["chat_id"] = json!(m.chat_id);
            body["message_id"] = json!(m.message_id);
            match self.api.call("editMessageText", &body).await {
                Ok(_) => {}
                // Edited already (a resend), or deleted in Telegram: nothing left to do.
                Err(e)
                    if e.code == 400
                        && (e.text.contains("message is not modified")
                            || e.text.contains("message to edit not found")) =>
                {
                    tracing::info!(id = %d.id, message = m.message_id, "telegram: the message is edited already or gone");
                }
                Err(e) => failed.push(e.text),
            }
        }
        all_of(&failed, messages.len(), "messages not edited")
    }
}

impl Sender for TelegramSender {
    fn channel(&self) -> Channel {
        Channel::Telegram
    }

    fn contexts(&self) -> Vec<String> {
        self.telegram.settings.chats.keys().cloned().collect()
    }

    fn timeout(&self) -> Duration {
        self.telegram.settings.timeout
    }

    fn send<'a>(&'a self, store: &'a StoreCalls, d: &'a Delivery) -> BoxFuture<'a, Attempt> {
        Box::pin(self.deliver(store, d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bot_token_has_botfathers_shape_and_debug_hides_it() {
        assert!(is_bot_token("123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"));
        assert!(!is_bot_token("AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"));
        assert!(!is_bot_token("123:short"));
        assert!(!is_bot_token("123:AAHdqTcvCH1vGWJxfSeo/../x?y=zzzz"));
        assert_eq!(format!("{:?}", BotToken("1:secret".into())), "BotToken(..)");
    }
}
