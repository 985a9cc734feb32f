//! The Slack channel's pure parts (issue 29): what a message says ([`blocks`], in Block Kit,
//! with the asker's text escaped as Slack's mrkdwn requires: [`mrkdwn`]), how a request
//! from Slack is authenticated ([`signature`], Slack's "Verifying requests from Slack"),
//! what a button press carries ([`interaction`]), and who a Slack user is in dshq
//! ([`users`], the config file's `[slack.users]`).
//!
//! Why apart from the host and the web face: these are rules about text and bytes, with no
//! I/O, tested on their own; the sender ([`crate::host::slack`]) and the interactions
//! endpoint ([`crate::web::slack`]) only move them over HTTP. A Slack message is a view
//! over the durable record, never the record: a press is an answer through the same
//! use-case as the page's, and the message is changed when the record says the request
//! ended.

pub mod blocks;
pub mod interaction;
pub mod mrkdwn;
pub mod signature;
pub mod users;
