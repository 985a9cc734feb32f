//! The HTTP host's services (`dshq daemon --listen`): what the faces served over HTTP (the
//! API and the page in [`crate::web`], `/mcp` in [`crate::mcp`], a channel's inbound route
//! in [`crate::channels`]) share at run time. None of them is a face, and none imports
//! one: the composition root ([`crate::serve`]) builds them and hands them to the faces as
//! one [`AppState`].
//!
//! - The web's database work runs on one blocking thread that owns its connection
//!   ([`db::Db`]); the tokio workers only parse, route and wait. After each commit it
//!   wakes the file loop, so outcome files are written at once.
//! - After every commit the host broadcasts what changed ([`changes::Changes`]); the
//!   event stream is fed by that broadcast, and a long-poll is woken by its own
//!   request's final change ([`waits`]).
//! - The host holds a context's provider lease while reviewers act over the web, shared
//!   by every face, and acts through it again once when it ended under it
//!   ([`provider::Providers`]).
//! - What a token holds open, to end it when the token is revoked ([`ends`]); the health
//!   probes ([`health`]).
//! - The plumbing of every handler: who is calling ([`auth::Caller`]), a bounded body
//!   ([`body::Body`]), the error document ([`error::ApiError`]).
//! - Each connection holds a descriptor: the host raises its soft open-file limit to the
//!   hard one at start ([`nofile`]), and the accept loop ([`listen`]) caps what clients
//!   hold open (a header-read timeout, connection caps in total and per peer, a reserve of
//!   descriptors), so no client can starve the file loop of descriptors.

pub mod auth;
pub mod body;
pub mod changes;
pub mod db;
pub mod ends;
pub mod error;
pub mod health;
pub mod https;
pub mod jwks;
pub mod listen;
pub mod nofile;
pub mod oidc;
pub mod provider;
pub mod state;
pub mod waits;

use std::net::SocketAddr;

pub use state::{AppState, Limits};

/// Parse `--listen`: `HOST:PORT`, or a bare port (loopback).
pub fn parse_listen(s: &str) -> std::result::Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>().map_err(|_| {
        format!("{s:?} is not an address: give PORT (loopback) or HOST:PORT such as 127.0.0.1:7465")
    })
}
