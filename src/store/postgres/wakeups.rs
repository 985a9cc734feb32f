//! Commits made by other processes and hosts, heard through `LISTEN`.
//!
//! A write transaction notifies only the hosts that need to wake: the asking root's
//! channel ([`outbox_channel`]) when it made an outcome of that root due, and
//! [`FEED_CHANNEL`] when it appended an event. PostgreSQL delivers a notification to its
//! listeners when (and only if) the transaction commits. A [`Listener`] holds a second
//! connection of its own (a connection waiting on notifications cannot run the store's
//! transactions) and [`Wakeups::wait`]s on it: the daemon runs a pass (expiry, the outbox)
//! when it fires, so an answer given on another host reaches this root's outbox without
//! waiting for the next tick. A file-only daemon listens on its root's channel alone, so
//! the claims and answers of other roots do not wake it; a daemon that serves reviewers
//! (the web host) or runs hooks listens on the feed as well.
//!
//! A notification carries nothing (the payload is empty): it only says "look again", and
//! several commits may arrive as one wakeup. A lost connection is an error of that `wait`;
//! the next `wait` reconnects and reports a wakeup at once, since commits made while it
//! was away were not heard.

use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Config};

use crate::error::Result;
use crate::store::calls::Wakeups;

/// The channel of every commit that appended an event.
pub const FEED_CHANNEL: &str = "dshq_feed";

/// The channel of the root whose origin is `origin`: a commit that makes one of its
/// outcomes due notifies it. A digest of the origin (a path), so the name is a short
/// identifier whatever the path holds.
pub fn outbox_channel(origin: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(origin.as_bytes());
    format!("dshq_outbox_{}", &crate::store::chain::hex(&digest)[..24])
}

/// A connection listening on its channels.
pub struct Listener {
    config: Config,
    channels: Vec<String>,
    client: Option<Client>,
}

impl std::fmt::Debug for Listener {
    // Never the config: it holds the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("connected", &self.client.is_some())
            .finish_non_exhaustive()
    }
}

fn listen(config: &Config, channels: &[String]) -> Result<Client> {
    // TLS as the store's own connection (`sslmode`, `PGSSLROOTCERT`).
    let mut client = super::tls::connect(config)?;
    for c in channels {
        // The names are this module's own (a fixed prefix and hex digits).
        client.batch_execute(&format!("LISTEN \"{c}\""))?;
    }
    Ok(client)
}

impl Listener {
    /// Connect and `LISTEN` on `channels`: commits from now on wake the next
    /// [`Wakeups::wait`].
    pub fn connect(config: &Config, channels: Vec<String>) -> Result<Listener> {
        Ok(Listener {
            client: Some(listen(config, &channels)?),
            config: config.clone(),
            channels,
        })
    }
}

/// Wait on a live connection: whether a notification came, or the connection's error.
fn heard(client: &mut Client, timeout: Duration) -> std::result::Result<bool, postgres::Error> {
    {
        let mut notifications = client.notifications();
        if notifications.timeout_iter(timeout).next()?.is_some() {
            // Several commits are one wakeup: drain what has arrived already.
            while let Ok(Some(_)) = notifications.iter().next() {}
            return Ok(true);
        }
    }
    // `None` is a timeout, or the server went away (the iterator cannot tell which).
    if client.is_closed() {
        client.is_valid(Duration::from_secs(1))?;
    }
    Ok(false)
}

impl Wakeups for Listener {
    fn wait(&mut self, timeout: Duration) -> Result<bool> {
        let Some(client) = self.client.as_mut().filter(|c| !c.is_closed()) else {
            self.client = None;
            self.client = Some(listen(&self.config, &self.channels)?);
            // Whatever was committed while the connection was down went unheard.
            return Ok(true);
        };
        match heard(client, timeout) {
            Ok(woke) => {
                if client.is_closed() {
                    self.client = None;
                }
                Ok(woke)
            }
            Err(e) => {
                self.client = None;
                Err(e.into())
            }
        }
    }
}
