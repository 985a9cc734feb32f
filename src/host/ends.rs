//! What a token holds open, and ending it: every event stream (`/api/v1/stream`, the
//! page's `/live`), waiting long-poll and MCP session registers here under the token that
//! opened it (and, for the page, its login session), and is ended by one call.
//!
//! Why a registry: each of these authenticates once, when it opens, and then runs for
//! minutes. A token revoked meanwhile (`dshq token revoke`, from another process) or a
//! page session that logs out or expires must not keep delivering, so the host ends what
//! the token holds: [`Ends::end_token`] (the revocation watch, [`watch_revocations`]),
//! [`Ends::end_session`] (logout, expiry) and [`Ends::end_all`] (a host that drains before
//! it stops). Each holder waits on its [`Held::ended`] beside its own work and learns why
//! ([`Ending`]), so a stream closes, a long-poll answers, an MCP session is closed.
//!
//! A holder that finishes by itself drops its [`Held`], which removes the registration.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::db::Db;

/// Why something a token held was ended (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The token was revoked (or no longer exists).
    Revoked,
    /// The page session it belongs to logged out or expired.
    SessionEnded,
    /// The host is stopping (or draining) and ends everything.
    HostStopping,
}

/// The registry (one per host).
#[derive(Default)]
pub struct Ends {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    open: HashMap<u64, Entry>,
}

struct Entry {
    token: String,
    session: Option<String>,
    end: watch::Sender<Option<Ending>>,
}

impl Ends {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register something token `token` (by name) opened, in page session `session` when
    /// it came through the page. Dropping the [`Held`] removes it.
    pub fn hold(self: &Arc<Self>, token: &str, session: Option<&str>) -> Held {
        let (end, rx) = watch::channel(None);
        let mut inner = self.lock();
        inner.next += 1;
        let key = inner.next;
        inner.open.insert(
            key,
            Entry {
                token: token.to_string(),
                session: session.map(str::to_string),
                end,
            },
        );
        Held {
            ends: self.clone(),
            key,
            rx,
        }
    }

    fn end_where(&self, why: Ending, pick: impl Fn(&Entry) -> bool) -> usize {
        let inner = self.lock();
        let mut n = 0;
        for e in inner.open.values().filter(|e| pick(e)) {
            // Registered until the holder drops it; the first reason stays.
            e.end.send_if_modified(|v| {
                let first = v.is_none();
                if first {
                    *v = Some(why);
                }
                first
            });
            n += 1;
        }
        n
    }

    /// End everything token `name` holds; how many holders were told.
    pub fn end_token(&self, name: &str, why: Ending) -> usize {
        self.end_where(why, |e| e.token == name)
    }

    /// End everything page session `id` holds.
    pub fn end_session(&self, id: &str) -> usize {
        self.end_where(Ending::SessionEnded, |e| e.session.as_deref() == Some(id))
    }

    /// End everything (a host that stops or drains).
    pub fn end_all(&self, why: Ending) -> usize {
        self.end_where(why, |_| true)
    }

    /// The names of the tokens that hold something open.
    pub fn tokens(&self) -> BTreeSet<String> {
        self.lock().open.values().map(|e| e.token.clone()).collect()
    }

    /// How many holders are registered.
    pub fn len(&self) -> usize {
        self.lock().open.len()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One registered holder; dropping it removes the registration.
pub struct Held {
    ends: Arc<Ends>,
    key: u64,
    rx: watch::Receiver<Option<Ending>>,
}

impl Held {
    /// Resolves when the holder is to end, with why (pending for ever otherwise).
    pub async fn ended(&mut self) -> Ending {
        loop {
            if let Some(why) = *self.rx.borrow_and_update() {
                return why;
            }
            if self.rx.changed().await.is_err() {
                // The registry dropped the sender: only when the registration is gone.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Whether it was ended already.
    pub fn is_ended(&self) -> Option<Ending> {
        *self.rx.borrow()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.ends.lock().open.remove(&self.key);
    }
}

/// How often the host looks for revoked tokens while something is held open: well under
/// the second within which a revocation must end what the token holds.
pub const REVOCATION_POLL: Duration = Duration::from_millis(250);

/// The host's revocation watch: while any token holds something open, read the token
/// records every [`REVOCATION_POLL`] and end what a revoked (or removed) token holds. A
/// revocation is made by `dshq token revoke` in another process, on the shared store, so
/// the store is where it is seen; nothing is read while nothing is held.
pub async fn watch_revocations(ends: Arc<Ends>, db: Db) {
    let mut every = tokio::time::interval(REVOCATION_POLL);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let held = ends.tokens();
        if held.is_empty() {
            continue;
        }
        let records = match db.read(crate::app::tokens::list).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the tokens to find revoked ones");
                continue;
            }
        };
        for name in held {
            let live = records
                .iter()
                .any(|t| t.name == name && t.revoked_ms.is_none());
            if !live {
                let n = ends.end_token(&name, Ending::Revoked);
                tracing::info!(token = %name, ended = n, "token revoked: ending what it held open");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ending_a_token_ends_its_holders_only_and_a_drop_unregisters() {
        let ends = Arc::new(Ends::default());
        let mut a = ends.hold("alice", Some("s1"));
        let mut b = ends.hold("bob", None);
        assert_eq!(ends.tokens().len(), 2);
        assert_eq!(ends.end_token("alice", Ending::Revoked), 1);
        assert_eq!(a.ended().await, Ending::Revoked);
        assert_eq!(b.is_ended(), None);
        // The first reason stays.
        ends.end_session("s1");
        assert_eq!(a.is_ended(), Some(Ending::Revoked));
        drop(a);
        assert_eq!(ends.len(), 1);
        ends.end_all(Ending::HostStopping);
        assert_eq!(b.ended().await, Ending::HostStopping);
        drop(b);
        assert!(ends.is_empty());
    }
}
