//! The session's provider lease as its threads share it: the key loop, the heartbeat
//! thread, the signal thread and the terminal watchdog.
//!
//! A lease the session registered can be given up for a while (the reviewer went idle,
//! [`super::idle`]) and registered anew when they return, so its token and row id change
//! during a session. Everything that uses the lease therefore reads it here, under one
//! mutex, and every step that changes it (pause, take back, the final release) holds that
//! mutex for its whole transaction: the heartbeat can never beat a token the idle watch
//! just released (which would read as "revoked" and end the session), and the signal
//! thread's release can never race a take-back into leaving a live lease behind.
//!
//! A lease given with `--lease` belongs to the user: it is heartbeated, never paused and
//! never released.

use std::sync::Mutex;
use std::time::Duration;

use crate::app;
use crate::error::Result;
use crate::root::Root;
use crate::store::Store;

/// The lease now: its token, its row id, and whether it is held.
struct State {
    token: String,
    lease_id: i64,
    /// Held (registered and not released by the session). A paused lease is not live.
    live: bool,
    /// Released for good at the end of the session: never taken back.
    ended: bool,
}

/// The session's lease, shared by its threads.
pub struct Held {
    root: Root,
    /// Registered by this session (a lease given with `--lease` is never released).
    owned: bool,
    context: String,
    name: String,
    ttl: Duration,
    state: Mutex<State>,
}

impl Held {
    /// The lease `token` (row `lease_id`) the session holds in `context` as `name`.
    pub fn new(
        root: &Root,
        token: String,
        lease_id: i64,
        owned: bool,
        context: &str,
        name: &str,
        ttl: Duration,
    ) -> Held {
        Held {
            root: root.clone(),
            owned,
            context: context.to_string(),
            name: name.to_string(),
            ttl,
            state: Mutex::new(State {
                token,
                lease_id,
                live: true,
                ended: false,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The token to act with now.
    pub fn token(&self) -> String {
        self.state().token.clone()
    }

    /// The lease's row id now (the walk shows the session's own claims).
    pub fn lease_id(&self) -> i64 {
        self.state().lease_id
    }

    /// Whether the session registered the lease (and so may release it).
    pub fn owned(&self) -> bool {
        self.owned
    }

    /// Whether the session gave its lease up for a while and may take it back.
    pub fn paused(&self) -> bool {
        let s = self.state();
        self.owned && !s.live && !s.ended
    }

    /// Whether the session holds the lease now (not paused, not ended).
    pub fn live(&self) -> bool {
        let s = self.state();
        s.live && !s.ended
    }

    /// Heartbeat the lease from `store` (the heartbeat thread's connection); nothing
    /// while it is paused or after the end.
    pub fn heartbeat(&self, store: &mut Store) -> Result<()> {
        let s = self.state();
        if !s.live || s.ended {
            return Ok(());
        }
        store.heartbeat(&s.token).map(|_| ())
    }

    /// Release the lease for good if the session owns it and still holds it; `true` when
    /// this call released it. Idempotent: the threads that end a session may race.
    pub fn release(&self) -> Result<bool> {
        let mut s = self.state();
        if s.ended {
            return Ok(false);
        }
        let released = if self.owned && s.live {
            let mut store = self.root.open_store()?;
            store.release(&s.token)?;
            true
        } else {
            false
        };
        s.live = false;
        s.ended = true;
        Ok(released)
    }

    /// Give the lease up for a while (the reviewer is idle): released like any release
    /// (its claims go back to `pending`, recorded in the event log), to be taken back by
    /// [`Held::take_back`]. `false` when there was nothing to give up (a given lease, a
    /// lease paused or ended already).
    pub fn pause(&self) -> Result<bool> {
        let mut s = self.state();
        if !self.owned || !s.live || s.ended {
            return Ok(false);
        }
        let mut store = self.root.open_store()?;
        store.release(&s.token)?;
        s.live = false;
        Ok(true)
    }

    /// Register a new lease in the context after a pause, then claim `showing` (the
    /// request on screen, which went back to `pending` with the pause) with it. Fails with
    /// `DUPLICATE_PROVIDER` when another provider took the context meanwhile; the claim's
    /// error (the request ended meanwhile) comes second, with the lease held.
    pub fn take_back(&self, showing: Option<&str>) -> Result<TakenBack> {
        let mut s = self.state();
        if s.live || s.ended {
            return Ok(TakenBack { claim: None });
        }
        let mut store = self.root.open_store()?;
        let session =
            app::session::Session::start(&mut store, &self.context, None, &self.name, self.ttl)?;
        s.token = session.token;
        s.lease_id = session.lease.lease_id;
        s.live = true;
        let claim = showing.map(|id| app::provide::claim(&mut store, &s.token, id).map(|_| ()));
        Ok(TakenBack { claim })
    }
}

/// What [`Held::take_back`] did after registering anew.
pub struct TakenBack {
    /// The claim of the request on screen, when there was one.
    pub claim: Option<Result<()>>,
}
