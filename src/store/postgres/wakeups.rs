//! Commits made by other processes and hosts, heard through `LISTEN dshq`.
//!
//! Every write transaction that appended an event runs `SELECT pg_notify('dshq', '')`
//! before its commit; PostgreSQL delivers the notification to every listener when (and
//! only if) the transaction commits. A [`Listener`] holds a second connection of its own
//! (a connection waiting on notifications cannot run the store's transactions) and
//! [`Wakeups::wait`]s on it: the daemon runs a pass (expiry, the outbox) when it fires, so
//! an answer given on another host reaches this root's outbox without waiting for the
//! next tick.
//!
//! A notification carries nothing (the payload is empty): it only says "look again", and
//! several commits may arrive as one wakeup. A lost connection is an error of that `wait`;
//! the next `wait` reconnects and reports a wakeup at once, since commits made while it
//! was away were not heard.

use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Config};

use crate::error::Result;
use crate::store::Wakeups;

/// The channel every dshq write notifies.
pub const CHANNEL: &str = "dshq";

/// A connection listening on [`CHANNEL`].
pub struct Listener {
    config: Config,
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

fn listen(config: &Config) -> Result<Client> {
    // TLS as the store's own connection (`sslmode`, `PGSSLROOTCERT`).
    let mut client = super::tls::connect(config)?;
    client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
    Ok(client)
}

impl Listener {
    /// Connect and `LISTEN`: commits from now on wake the next [`Wakeups::wait`].
    pub fn connect(config: &Config) -> Result<Listener> {
        Ok(Listener {
            config: config.clone(),
            client: Some(listen(config)?),
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
            self.client = Some(listen(&self.config)?);
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
