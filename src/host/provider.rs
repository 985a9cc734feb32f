//! The host as a context's provider: one lease per context, held by the host while
//! reviewers act through it (the HTTP API's answers, the web page's reviewers), shared by
//! all of them, heartbeated while in use and released once idle.
//!
//! Why one lease per context and not one per reviewer: a context has one live provider
//! (DUPLICATE_PROVIDER otherwise), and several people on the page must be able to answer
//! side by side. The lease's holder is `web`; each act through it is recorded as the
//! person who did it (`web:NAME`, [`crate::app::provide::Acting::OnBehalf`]). When a
//! terminal reviewer holds the context, registering fails with DUPLICATE_PROVIDER and the
//! web caller gets that error: the context is theirs until they leave.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::db::Db;
use crate::app::provide::Acting;
use crate::app::session;
use crate::core::audit::Actor;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::{HostMark, RequestRow, Store};

/// What an act through the host's lease is ([`Providers::act`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// An answer from the page or a channel: on a request with a quorum a vote, cast as
    /// the reviewer with no lease (so reviewers on different faces never meet
    /// DUPLICATE_PROVIDER); on any other, through the host's lease.
    Answer,
    /// An answer over the JSON API: as [`Act::Answer`], the lease marked as the API's
    /// ([`Providers::acting_for_api`]).
    ApiAnswer,
    /// A claim or a cancel over the JSON API: through the host's lease, marked as the
    /// API's.
    ApiOther,
}

/// The name the host's leases are registered with.
pub const HOLDER: &str = "web";

struct Held {
    token: String,
    used: Instant,
    /// The last act through the JSON API (not the page): such a caller has no page open,
    /// so the last page leaving says nothing about it.
    api_used: Option<Instant>,
}

/// The leases the host holds, by context.
pub struct Providers {
    db: Db,
    held: Mutex<HashMap<String, Held>>,
    ttl: Duration,
    idle: Duration,
    /// This host, recorded with every lease it registers.
    host: HostMark,
}

/// This host as its leases record it: the root's origin (its stable identity, the same
/// across restarts, different for every root sharing a store), and for people the host
/// name and the root's path.
pub fn host_mark(root: &Root, idle: Duration) -> Result<HostMark> {
    Ok(HostMark {
        id: root.origin()?,
        label: format!("{}:{}", host_name(), root.dir().display()),
        idle_ms: crate::clock::duration_ms(idle),
    })
}

/// This machine's host name (`uname`'s node name, what `gethostname` reads), or
/// `localhost` when it has none.
fn host_name() -> String {
    let name = rustix::system::uname();
    match name.nodename().to_str() {
        Ok(s) if !s.is_empty() => s.to_string(),
        _ => "localhost".to_string(),
    }
}

impl Providers {
    /// Hold leases with `ttl`, released after `idle` without use, recorded as `host`'s.
    ///
    /// First the leases of this host's earlier life are taken over: a host killed while
    /// holding a context left its lease live for up to its ttl, and until it expired every
    /// answer through the page and the API met DUPLICATE_PROVIDER. They are released now
    /// (their claims back to pending), and the host registers afresh when a reviewer acts.
    /// Another host's leases (another root's origin on a shared store) are never touched.
    pub async fn start(
        db: Db,
        ttl: Duration,
        idle: Duration,
        host: HostMark,
    ) -> Result<Arc<Providers>> {
        let id = host.id.clone();
        let taken = db.write(move |store| store.take_over_host(&id)).await?;
        for t in &taken {
            tracing::info!(
                context = %crate::text::for_log(&t.context),
                generation = t.generation,
                released = t.released.len(),
                "took over the provider lease of this host's earlier life"
            );
        }
        Ok(Arc::new(Providers {
            db,
            held: Mutex::new(HashMap::new()),
            ttl,
            idle,
            host,
        }))
    }

    /// Act in `context` as `actor`: the host's lease there (registered now when it holds
    /// none), marked as used.
    pub async fn acting(&self, context: &str, actor: Actor) -> Result<Acting> {
        let mut held = self.held.lock().await;
        if let Some(h) = held.get_mut(context) {
            h.used = Instant::now();
            return Ok(Acting::OnBehalf {
                token: h.token.clone(),
                actor,
            });
        }
        let (ctx, ttl, host) = (context.to_string(), self.ttl, self.host.clone());
        let reg = self
            .db
            .write(move |store| session::register_host(store, &ctx, HOLDER, ttl, &host))
            .await?;
        tracing::info!(context = %crate::text::for_log(context), "the host holds the context's provider lease");
        held.insert(
            context.to_string(),
            Held {
                token: reg.lease.clone(),
                used: Instant::now(),
                api_used: None,
            },
        );
        Ok(Acting::OnBehalf {
            token: reg.lease,
            actor,
        })
    }

    /// Answer `row` as `actor`: on a request with a quorum the answer is a vote, cast as
    /// the reviewer themselves with no lease (so reviewers on different faces never meet
    /// DUPLICATE_PROVIDER); on any other, through the host's lease of its context.
    pub async fn answering(&self, row: &RequestRow, actor: Actor) -> Result<Acting> {
        if row.quorum.is_some() {
            return Ok(Acting::Voter(actor));
        }
        self.acting(&row.context, actor).await
    }

    /// Run `f` on the database thread as `actor` acting on `row` through the host's
    /// shared lease of its context (a vote on a request with a quorum takes none: see
    /// [`Act`]). When the held lease ended under the host (revoked, or expired while the
    /// host was stopped), it is forgotten and `f` runs once more with a new one: every
    /// face that acts through the host (the page, the API, a channel's button) gets this
    /// retry from here.
    pub async fn act<T, F>(&self, row: &RequestRow, actor: Actor, act: Act, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&mut Store, &Acting) -> Result<T> + Send + Clone + 'static,
    {
        for attempt in 0..2 {
            let acting = match act {
                Act::Answer | Act::ApiAnswer if row.quorum.is_some() => {
                    Acting::Voter(actor.clone())
                }
                Act::Answer => self.acting(&row.context, actor.clone()).await?,
                Act::ApiAnswer | Act::ApiOther => {
                    self.acting_for_api(&row.context, actor.clone()).await?
                }
            };
            let f = f.clone();
            match self.db.write(move |store| f(store, &acting)).await {
                Err(Error::LeaseExpired(_)) if attempt == 0 => self.forget(&row.context).await,
                r => return r,
            }
        }
        Err(Error::LeaseExpired("the host's lease ended twice".into()))
    }

    /// Keep the context's lease (a reviewer is active on it).
    pub async fn touch(&self, context: &str) {
        if let Some(h) = self.held.lock().await.get_mut(context) {
            h.used = Instant::now();
        }
    }

    /// Forget the lease of `context` (it ended under us: revoked or expired), so the next
    /// act registers anew.
    pub async fn forget(&self, context: &str) {
        self.held.lock().await.remove(context);
    }

    /// [`Providers::acting`] for a caller of the JSON API: the same shared lease, marked
    /// as used by someone the page cannot see, so that the last page leaving does not
    /// release it under them ([`Providers::release_for_pages`]).
    pub async fn acting_for_api(&self, context: &str, actor: Actor) -> Result<Acting> {
        let acting = self.acting(context, actor).await?;
        if let Some(h) = self.held.lock().await.get_mut(context) {
            h.api_used = Some(Instant::now());
        }
        Ok(acting)
    }

    /// The last reviewer left the page: release the lease of `context` now, if the host
    /// holds it, and its claims go back to pending. Not when the JSON API acted through it
    /// within the idle time: an API caller's claims stay until the idle release, as if no
    /// page had ever been open.
    pub async fn release_for_pages(&self, context: &str) {
        let h = {
            let mut held = self.held.lock().await;
            let api_recent = held
                .get(context)
                .and_then(|h| h.api_used)
                .is_some_and(|t| t.elapsed() < self.idle);
            if api_recent {
                tracing::info!(context = %crate::text::for_log(context), "the last page left, but the API used the lease: kept until idle");
                return;
            }
            held.remove(context)
        };
        let Some(h) = h else {
            return;
        };
        let token = h.token;
        match self
            .db
            .write(move |store| store.release(&token).map(|_| ()))
            .await
        {
            Ok(()) => {
                tracing::info!(context = %crate::text::for_log(context), "no reviewer left: released the context's provider lease")
            }
            Err(e) => tracing::warn!(error = %e, "cannot release the host's provider lease"),
        }
    }

    /// Whether the host holds `context` now.
    pub async fn holds(&self, context: &str) -> bool {
        self.held.lock().await.contains_key(context)
    }

    /// Heartbeat the leases in use and release the idle ones; run every `ttl / 3`.
    pub async fn keep(&self) {
        let mut held = self.held.lock().await;
        let mut ended = Vec::new();
        for (context, h) in held.iter() {
            let token = h.token.clone();
            let idle = h.used.elapsed() >= self.idle;
            let r = if idle {
                self.db
                    .write(move |store| store.release(&token).map(|_| ()))
                    .await
            } else {
                self.db
                    .write(move |store| store.heartbeat(&token).map(|_| ()))
                    .await
            };
            match r {
                Ok(()) if !idle => {}
                Ok(()) => {
                    tracing::info!(context = %crate::text::for_log(context), "idle: released the context's provider lease");
                    ended.push(context.clone());
                }
                Err(Error::LeaseExpired(why)) => {
                    tracing::info!(context = %crate::text::for_log(context), why = %why, "the host's provider lease ended");
                    ended.push(context.clone());
                }
                Err(e) => tracing::warn!(error = %e, "cannot heartbeat the host's provider lease"),
            }
        }
        for c in ended {
            held.remove(&c);
        }
    }

    /// Release every lease (at shutdown).
    pub async fn release_all(&self) {
        let mut held = self.held.lock().await;
        for (_, h) in held.drain() {
            let token = h.token;
            let _ = self
                .db
                .write(move |store| store.release(&token).map(|_| ()))
                .await;
        }
    }

    /// How often [`Providers::keep`] must run.
    pub fn keep_every(&self) -> Duration {
        (self.ttl / 3).max(Duration::from_millis(100))
    }
}
