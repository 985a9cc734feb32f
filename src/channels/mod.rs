//! The channels: where dshq reaches people who are not looking at one of its faces. A
//! channel sends a request (and its reminders, escalations and end) somewhere people
//! already are: a webhook ([`webhook`]), mail ([`email`]), a Slack channel ([`slack`]), a
//! reviewer's phone or browser by Web Push ([`push`]). Some take an answer back the same
//! way (a Slack button, [`slack::interactions`]; a notification's action,
//! [`push::routes`]); a mail's link opens the page, whose route it is.
//!
//! Every channel is the same three parts, so a new one (Telegram, Teams) has an
//! obvious place: a folder or file here with
//!
//! 1. its settings (a field of [`Channels`], filled from the daemon's flags);
//! 2. its [`Sender`]: which contexts it serves and one attempt of one delivery, built in
//!    [`Channels::senders`]. The loop that reads the due deliveries, retries with backoff
//!    and marks them delivered is written once ([`deliveries`]) and runs in the plain
//!    daemon as well as the host; a channel never retries by itself;
//! 3. its rendering, apart from the page's: what a message says, with the asker's text
//!    escaped the way that medium needs (Slack's mrkdwn, HTML through templates that
//!    escape by default and the one rule for untrusted text, [`crate::html`]);
//!
//! and, when it takes answers back, its inbound routes (added in [`routes`], served by
//! the host beside the web face): each answers through the same use-case and the same
//! host lease as the page ([`crate::host::provider::Providers::act`]).
//!
//! A channel imports the host's services, `app` and below; never another face.

pub mod deliveries;
pub mod email;
pub mod push;
pub mod sender;
pub mod slack;
pub mod target;
pub mod teams;
pub mod telegram;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;

pub use sender::{Attempt, Sender, StoreCalls};

use crate::error::Result;
use crate::host::AppState;
use crate::root::Root;

/// The channels of a daemon, as configured (each channel's sender is built from its part
/// at start, by [`Channels::senders`]).
#[derive(Debug, Clone)]
pub struct Channels {
    /// `--webhook`: one URL per context.
    pub webhooks: Option<webhook::Webhooks>,
    /// `--slack`: one Slack channel per context ([`slack`]).
    pub slack: Option<slack::Slack>,
    /// `--email`: mail over SMTP to each context's recipients ([`email`]).
    pub email: Option<email::Email>,
    /// `--push`: Web Push to the devices the contexts' reviewers subscribed ([`push`]).
    pub push: Option<push::Push>,
    /// The config file's `[teams]`: Adaptive Cards through the Bot Framework ([`teams`]).
    pub teams: Option<teams::Teams>,
    /// The config file's `[telegram]`: each context's chats ([`telegram`]).
    pub telegram: Option<telegram::Telegram>,
    /// The wait after a delivery's first failed attempt (doubling after each).
    pub retry_min: Duration,
}

impl Channels {
    /// Whether no channel is configured (the daemon then starts no sender).
    pub fn is_empty(&self) -> bool {
        self.webhooks.is_none()
            && self.teams.is_none()
            && self.slack.is_none()
            && self.email.is_none()
            && self.push.is_none()
            && self.telegram.is_none()
    }

    /// The sender of each configured channel, with its secrets read now (a daemon missing
    /// one does not start).
    pub fn senders(&self, root: &Root) -> Result<Vec<Arc<dyn Sender>>> {
        let mut senders: Vec<Arc<dyn Sender>> = Vec::new();
        if let Some(w) = &self.webhooks {
            senders.push(Arc::new(webhook::WebhookSender::new(root, w.clone())?));
        }
        if let Some(s) = &self.slack {
            senders.push(Arc::new(slack::SlackSender::new(root, s.clone())?));
        }
        if let Some(e) = &self.email {
            senders.push(Arc::new(email::EmailSender::new(root, e.clone())?));
        }
        if let Some(p) = &self.push {
            senders.push(Arc::new(push::PushSender::new(root, p.clone())?));
        }
        if let Some(t) = &self.telegram {
            senders.push(Arc::new(telegram::TelegramSender::new(root, t.clone())?));
        }
        if let Some(t) = &self.teams {
            senders.push(Arc::new(teams::TeamsSender::new(root, t.clone())?));
        }
        Ok(senders)
    }
}

/// The channels' inbound routes (Slack's interactions endpoint when Slack is on), served
/// by the host beside the web face; their secrets are read now.
pub fn routes(state: &AppState, channels: Option<&Channels>) -> Result<Router> {
    let mut router = Router::new();
    if let Some(s) = channels.and_then(|c| c.slack.as_ref()) {
        router = router.merge(slack::interactions::routes(state, s)?);
    }
    if let Some(p) = channels.and_then(|c| c.push.as_ref()) {
        router = router.merge(push::routes::routes(state, p)?);
    }
    if let Some(t) = channels.and_then(|c| c.telegram.as_ref()) {
        router = router.merge(telegram::webhook::routes(state, t)?);
    }
    if let Some(t) = channels.and_then(|c| c.teams.as_ref()) {
        router = router.merge(teams::endpoint::routes(state, t)?);
    }
    Ok(router)
}
