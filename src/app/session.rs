//! Provider leases: register, heartbeat, release, status; and a held session lease (the
//! reviewer's screen, later the web page and an MCP review) that heartbeats while it works
//! and is released when it ends.

use std::time::Duration;

pub use crate::clock::duration_ms;
use crate::error::Result;
use crate::store::{HostMark, Lease, LeaseInfo, Registered, Store};

/// Register a provider lease in `context`.
pub fn register(store: &mut Store, context: &str, name: &str, ttl: Duration) -> Result<Registered> {
    Ok(store.register(context, name, duration_ms(ttl))?.0)
}

/// Register the provider lease a host holds in `context` for its web page and HTTP API,
/// recording the host ([`HostMark`]).
pub fn register_host(
    store: &mut Store,
    context: &str,
    name: &str,
    ttl: Duration,
    host: &HostMark,
) -> Result<Registered> {
    Ok(store
        .register_as(context, name, duration_ms(ttl), Some(host))?
        .0)
}

/// The lease of `token` (live or not), or the unended lease of each context (or one).
pub fn status(
    store: &mut Store,
    token: Option<&str>,
    context: Option<&str>,
) -> Result<Vec<LeaseInfo>> {
    match token {
        Some(token) => Ok(vec![store.lease_info(token)?]),
        None => store.lease_status(context),
    }
}

/// A lease a session holds: its own (registered here, released by [`Session::end`]) or
/// one given by token (heartbeated, never released by the session).
#[derive(Debug, Clone)]
pub struct Session {
    /// The token.
    pub token: String,
    /// The lease as last seen.
    pub lease: Lease,
    /// Whether the session registered it (and so releases it at the end).
    pub owned: bool,
}

impl Session {
    /// Take up the lease `given`, or register one in `context` as `name`.
    pub fn start(
        store: &mut Store,
        context: &str,
        given: Option<&str>,
        name: &str,
        ttl: Duration,
    ) -> Result<Session> {
        match given {
            Some(token) => {
                let lease = store.heartbeat(token)?;
                Ok(Session {
                    token: token.to_string(),
                    lease,
                    owned: false,
                })
            }
            None => {
                let (reg, lease) = store.register(context, name, duration_ms(ttl))?;
                Ok(Session {
                    token: reg.lease,
                    lease,
                    owned: true,
                })
            }
        }
    }

    /// Keep the lease alive.
    pub fn heartbeat(&mut self, store: &mut Store) -> Result<()> {
        self.lease = store.heartbeat(&self.token)?;
        Ok(())
    }

    /// End the session: release the lease when the session registered it.
    pub fn end(&self, store: &mut Store) -> Result<()> {
        if self.owned {
            store.release(&self.token)?;
        }
        Ok(())
    }
}
