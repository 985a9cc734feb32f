//! The Microsoft Teams channel, through the Bot Framework: a delivery of a new request, a
//! reminder or an escalation sends an Adaptive Card ([`card`]) to its context's
//! conversation, proactively (`POST {serviceUrl}/v3/conversations/{id}/activities`); a
//! delivery of the request's end replaces every card sent for it
//! (`PUT …/activities/{activityId}`) with one saying who ended it and when, with no action
//! left. A card's action comes back to the bot's messaging endpoint ([`endpoint`]).
//!
//! The bot's calls carry its own token, from the Bot Framework's token endpoint (OAuth
//! client credentials with the app id and its password, read from a 0600 file), cached
//! until shortly before it expires. The service URL, the token endpoint and the OpenID
//! metadata are HTTPS, or plain HTTP to a loopback stand-in only, so the password and the
//! tokens never cross a network in the clear.
//!
//! Where each card went (its conversation and activity id) is recorded by its delivery in
//! the store's table of the chat messages the senders posted (the Slack sender's, under
//! `teams:CONVERSATION`, which no Slack channel id can be): a delivery sent again after a
//! crash finds its card and sends no second one, the end updates every card recorded,
//! and an action is taken only from a card recorded for its request.

pub mod card;
pub mod endpoint;

use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use serde_json::Value;

use crate::channels::sender::{all_of, Attempt, Sender, StoreCalls};
use crate::channels::slack::blocks::{Call, Ended, Shown};
use crate::channels::slack::{read_now, step_of, Step};
use crate::core::channel::Channel;
use crate::error::Result;
use crate::host::https::Https;
use crate::root::Root;
use crate::store::{Delivery, RequestRow};

/// What the app password file holds, in messages.
pub const PASSWORD_WHAT: &str = "Teams app password";

/// How a card's conversation is recorded among the chat messages.
const RECORD_PREFIX: &str = "teams:";

/// The most a Bot Framework answer may weigh.
const MAX_ANSWER: usize = 1 << 20;

/// The Teams channel of a daemon, as configured.
#[derive(Debug, Clone)]
pub struct Teams {
    /// The config file's `[teams]`.
    pub settings: crate::core::teams::Settings,
    /// The page's base URL, for "open on the page".
    pub page_url: String,
}

impl Teams {
    /// The link to request `id` on the page.
    pub fn link(&self, id: &str) -> String {
        format!("{}/r/{id}", self.page_url)
    }

    /// The conversation of `context`, if it has one.
    pub fn conversation(&self, context: &str) -> Option<&str> {
        self.settings.conversations.get(context).map(String::as_str)
    }
}

/// The recorded form of a card's conversation.
pub fn recorded(conversation: &str) -> String {
    format!("{RECORD_PREFIX}{conversation}")
}

/// The cards recorded for a request, as `(conversation, activity id)`, from the chat
/// messages recorded for it.
pub fn cards(messages: &[crate::store::driver::slack::SlackMessage]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter_map(|m| {
            m.channel
                .strip_prefix(RECORD_PREFIX)
                .map(|c| (c.to_string(), m.ts.clone()))
        })
        .collect()
}

/// The app password. Its `Debug` shows nothing of it.
#[derive(Clone)]
struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(..)")
    }
}

/// The bot's client of the Bot Connector: its token (cached) and the HTTPS client.
pub struct Connector {
    teams: Teams,
    password: Password,
    client: Client<Https, Full<Bytes>>,
    token: tokio::sync::Mutex<Option<(String, Instant)>>,
}

impl Connector {
    /// The client of `teams`, its app password read from its file (refused when group or
    /// others may read it).
    pub fn new(teams: &Teams) -> Result<Connector> {
        let password = crate::channels::slack::read_secret_file(
            &teams.settings.app_password_file,
            PASSWORD_WHAT,
        )?;
        Ok(Connector {
            teams: teams.clone(),
            password: Password(password),
            client: crate::host::https::client("the Bot Framework")?,
            token: tokio::sync::Mutex::new(None),
        })
    }

    async fn exchange(
        &self,
        request: hyper::Request<Full<Bytes>>,
    ) -> std::result::Result<hyper::Response<Bytes>, String> {
        crate::host::https::exchange(
            &self.client,
            request,
            self.teams.settings.timeout,
            MAX_ANSWER,
        )
        .await
    }

    /// The bot's token: the cached one while it has a minute left, else a new one.
    async fn token(&self) -> std::result::Result<String, String> {
        let mut cached = self.token.lock().await;
        if let Some((t, until)) = cached.as_ref() {
            if Instant::now() < *until {
                return Ok(t.clone());
            }
        }
        let s = &self.teams.settings;
        let form = serde_urlencoded::to_string([
            ("grant_type", "client_credentials"),
            ("client_id", s.app_id.as_str()),
            ("client_secret", self.password.0.as_str()),
            ("scope", crate::core::teams::SCOPE),
        ])
        .map_err(|e| format!("the token request cannot be built: {e}"))?;
        let request = hyper::Request::post(&s.token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Full::new(Bytes::from(form)))
            .map_err(|e| format!("the token request cannot be built: {e}"))?;
        let resp = self
            .exchange(request)
            .await
            .map_err(|e| format!("the token endpoint: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!(
                "the token endpoint answered HTTP {}",
                resp.status().as_u16()
            ));
        }
        let v: Value = serde_json::from_slice(resp.body())
            .map_err(|_| "the token endpoint's answer is not JSON".to_string())?;
        let token = v["access_token"]
            .as_str()
            .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_graphic()))
            .ok_or("the token endpoint's answer has no access_token")?
            .to_string();
        let life = Duration::from_secs(v["expires_in"].as_u64().unwrap_or(0));
        let until = Instant::now() + life.saturating_sub(Duration::from_secs(60));
        *cached = Some((token.clone(), until));
        Ok(token)
    }

    /// `{serviceUrl}/v3/conversations/{conversation}/activities[/{activity}]`, each part
    /// escaped as a path segment.
    fn url(
        &self,
        conversation: &str,
        activity: Option<&str>,
    ) -> std::result::Result<String, String> {
        let mut u = url::Url::parse(&self.teams.settings.service_url)
            .map_err(|e| format!("the service URL: {e}"))?;
        {
            let mut p = u
                .path_segments_mut()
                .map_err(|_| "the service URL cannot hold a path".to_string())?;
            p.pop_if_empty()
                .extend(["v3", "conversations", conversation, "activities"]);
            if let Some(a) = activity {
                p.push(a);
            }
        }
        Ok(u.to_string())
    }

    async fn call(
        &self,
        method: hyper::Method,
        url: String,
        body: &Value,
    ) -> std::result::Result<Value, String> {
        let token = self.token().await?;
        let request = hyper::Request::builder()
            .method(method)
            .uri(url)
            .header("content-type", "application/json; charset=utf-8")
            .header("authorization", format!("Bearer {token}"))
            .header("user-agent", concat!("dshq/", env!("CARGO_PKG_VERSION")))
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| format!("the request cannot be built: {e}"))?;
        let resp = self
            .exchange(request)
            .await
            .map_err(|e| format!("not sent: {e}"))?;
        let status = resp.status();
        if status.as_u16() == 401 || status.as_u16() == 403 {
            // A token the service no longer takes: the next attempt gets a new one.
            *self.token.lock().await = None;
        }
        if !status.is_success() {
            return Err(format!(
                "the Bot Connector answered HTTP {}",
                status.as_u16()
            ));
        }
        Ok(serde_json::from_slice(resp.body()).unwrap_or(Value::Null))
    }

    /// Send `activity` to `conversation`: the new activity's id.
    pub async fn send(
        &self,
        conversation: &str,
        activity: &Value,
    ) -> std::result::Result<String, String> {
        let url = self.url(conversation, None)?;
        let answer = self.call(hyper::Method::POST, url, activity).await?;
        answer["id"]
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .ok_or_else(|| "the Bot Connector's answer names no activity id".to_string())
    }

    /// Replace activity `id` of `conversation` with `activity`.
    pub async fn update(
        &self,
        conversation: &str,
        id: &str,
        activity: &Value,
    ) -> std::result::Result<(), String> {
        let url = self.url(conversation, Some(id))?;
        let mut body = activity.clone();
        body["id"] = Value::String(id.to_string());
        self.call(hyper::Method::PUT, url, &body).await.map(|_| ())
    }
}

/// The card `d`'s request shows now (`row`): the asking one while it is open, the ended one
/// after.
fn render(
    teams: &Teams,
    id: &str,
    row: &RequestRow,
    call: &Call,
    end: Option<&Ended>,
) -> std::result::Result<Value, String> {
    let request = row
        .request()
        .ok_or_else(|| format!("request {id} does not parse"))?;
    let link = teams.link(id);
    let shown = Shown {
        id,
        context: &row.context,
        request: &request,
        link: &link,
    };
    let first = request
        .questions
        .first()
        .map(|q| q.question.as_str())
        .unwrap_or("");
    Ok(match end {
        None => {
            let digest = row.request_digest().unwrap_or_default();
            card::activity(card::message(&shown, call, &digest), first)
        }
        Some(e) => card::activity(card::ended(&shown, e), first),
    })
}

/// The Teams channel's sender.
pub struct TeamsSender {
    teams: Teams,
    connector: Connector,
}

impl TeamsSender {
    /// The sender of `teams`, its app password read now.
    pub fn new(_root: &Root, teams: Teams) -> Result<TeamsSender> {
        let connector = Connector::new(&teams)?;
        Ok(TeamsSender { teams, connector })
    }

    async fn deliver(&self, store: &StoreCalls, d: &Delivery) -> Attempt {
        match step_of(d)? {
            Step::Post(call) => self.post(store, d, call).await,
            Step::End => self.update(store, d).await,
            Step::Nothing => Ok(()),
        }
    }

    fn conversation_of(&self, d: &Delivery) -> std::result::Result<&str, String> {
        self.teams
            .conversation(&d.context)
            .ok_or_else(|| format!("no Teams conversation for context {:?}", d.context))
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
        let conversation = self.conversation_of(d)?;
        let Some((row, end)) = read_now(store, &d.request_id).await? else {
            return Ok(());
        };
        let activity = render(&self.teams, &d.request_id, &row, &call, end.as_ref())?;
        let sent = self.connector.send(conversation, &activity).await?;
        let (delivery, request, conv) =
            (d.id.clone(), d.request_id.clone(), recorded(conversation));
        store
            .call(move |s| s.record_slack_message(&delivery, &request, &conv, &sent))
            .await
            .map(|_| ())
            // Sent, not recorded: tried again, it sends again (a second card, never a
            // lost one).
            .map_err(|e| format!("sent, but not recorded: {e}"))
    }

    /// The end shown on every card sent for `d`'s request in this context's conversation.
    async fn update(&self, store: &StoreCalls, d: &Delivery) -> Attempt {
        let conversation = self.conversation_of(d)?.to_string();
        let id = d.request_id.clone();
        let sent: Vec<_> = cards(&store.call(move |s| s.slack_messages(&id)).await?)
            .into_iter()
            .filter(|(c, _)| *c == conversation)
            .collect();
        if sent.is_empty() {
            return Ok(());
        }
        let Some((row, Some(end))) = read_now(store, &d.request_id).await? else {
            return Ok(());
        };
        let activity = render(&self.teams, &d.request_id, &row, &Call::New, Some(&end))?;
        let mut failed = Vec::new();
        for (c, a) in &sent {
            if let Err(e) = self.connector.update(c, a, &activity).await {
                failed.push(e);
            }
        }
        all_of(&failed, sent.len(), "cards not updated")
    }
}

impl Sender for TeamsSender {
    fn channel(&self) -> Channel {
        Channel::Teams
    }

    fn contexts(&self) -> Vec<String> {
        self.teams.settings.conversations.keys().cloned().collect()
    }

    fn timeout(&self) -> Duration {
        self.teams.settings.timeout
    }

    fn send<'a>(&'a self, store: &'a StoreCalls, d: &'a Delivery) -> BoxFuture<'a, Attempt> {
        Box::pin(self.deliver(store, d))
    }
}

/// The Teams channel of the config file's `[teams]`, linking to the page at `page_url`
/// (the one page-URL rule of every channel: the table's `page-url`, else `--listen`'s).
pub fn configured(
    settings: crate::core::teams::Settings,
    page_url: String,
    listening: bool,
) -> Teams {
    if !listening {
        tracing::warn!("[teams]: without --listen the cards are sent but their actions have no endpoint to reach");
    }
    Teams { settings, page_url }
}
