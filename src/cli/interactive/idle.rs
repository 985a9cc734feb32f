//! Idle release: a screen nobody is at gives its lease up, and takes it back on the
//! reviewer's next key.
//!
//! One open screen used to hold its context's lease for as long as it stayed open, so a
//! reviewer who walked away left every other reviewer with `DUPLICATE_PROVIDER`. Now every
//! key the screen reads goes through [`super::input`], which asks this watch how long the
//! reviewer may still be away; after `--idle-release` (default 5m) without a key the
//! session releases its lease (a release like any other, in the event log; the request on
//! screen goes back to `pending`) and says so under the prompt. The next key only takes
//! the lease back, it is not acted on: the screen under the note may be stale (the request
//! may have ended meanwhile), so the reviewer sees the result before any key counts.
//! Taking back registers a new lease and claims the request on screen again; when another
//! provider took the context meanwhile, the session ends with that provider's
//! `DUPLICATE_PROVIDER` (who, since, until, what to do) and exit status 5 rather than
//! linger without a lease. While the follow loop waits for requests no key is asked for,
//! so the time runs there too.
//!
//! A lease given with `--lease` is the user's: it is never released, idle or not.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::input::{self, Idle as _};
use super::lease::Held;
use crate::error::Error;

/// Why a key ended the session's current step instead of going on.
#[derive(Debug)]
pub enum Ended {
    /// The lease could not be taken back (another provider holds the context, or the
    /// store failed): the session ends with this error.
    Lost(Error),
    /// The lease is back, but the request on screen ended (or was taken) meanwhile.
    Gone {
        /// The request.
        id: String,
        /// Why it cannot be claimed again.
        error: Error,
    },
}

/// The idle watch of one session.
pub struct Presence {
    held: Arc<Held>,
    /// How long without a key before the lease is released; `None`: never.
    after: Option<Duration>,
    last: Mutex<Instant>,
    /// The request on screen (claimed again when the lease is taken back).
    showing: Mutex<Option<String>>,
    /// The line shown under the prompt: released, or taken back.
    note: Mutex<Option<String>>,
    ended: Mutex<Option<Ended>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Presence {
    /// Watch `held`: release it after `after` without a key (never for a given lease).
    pub fn new(held: Arc<Held>, after: Duration) -> Presence {
        let after = held.owned().then_some(after);
        Presence {
            held,
            after,
            last: Mutex::new(Instant::now()),
            showing: Mutex::new(None),
            note: Mutex::new(None),
            ended: Mutex::new(None),
        }
    }

    /// The request now on screen (claimed by the session), or none.
    pub fn showing(&self, id: Option<&str>) {
        *lock(&self.showing) = id.map(str::to_string);
    }

    /// Whether the lease is released for idleness (a key takes it back).
    pub fn away(&self) -> bool {
        self.held.paused()
    }

    /// The reviewer was busy without keys reaching the screen (writing in `$EDITOR`): the
    /// idle time starts again now.
    pub fn touch(&self) {
        *lock(&self.last) = Instant::now();
    }

    /// Forget the note (the caller said it another way).
    pub fn clear_note(&self) {
        *lock(&self.note) = None;
    }

    /// Why the last step ended, once.
    pub fn take_ended(&self) -> Option<Ended> {
        lock(&self.ended).take()
    }

    /// Release the lease when the time is up (the follow loop's wait calls this; the
    /// key loops do through [`input::Idle`]). `true` when it released now.
    pub fn check(&self) -> bool {
        if self.left().is_some_and(|l| l.is_zero()) {
            self.release_now()
        } else {
            false
        }
    }

    fn release_now(&self) -> bool {
        let Some(after) = self.after else {
            return false;
        };
        match self.held.pause() {
            Ok(true) => {
                *lock(&self.note) = Some(format!(
                    "lease released after {} without a key · press any key to take it back",
                    humantime::format_duration(after)
                ));
                true
            }
            Ok(false) => {
                *lock(&self.last) = Instant::now();
                false
            }
            Err(e) => {
                // Keep the lease (and the screen); try again after another idle period.
                *lock(&self.last) = Instant::now();
                *lock(&self.note) = Some(format!("could not release the idle lease: {e}"));
                false
            }
        }
    }
}

impl input::Idle for Presence {
    fn left(&self) -> Option<Duration> {
        let after = self.after?;
        // Paused already, or ended: nothing to give up.
        if !self.held.live() {
            return None;
        }
        Some(after.saturating_sub(lock(&self.last).elapsed()))
    }

    fn idle(&self) {
        self.release_now();
    }

    fn key(&self) -> input::Seen {
        *lock(&self.last) = Instant::now();
        if !self.held.paused() {
            *lock(&self.note) = None;
            return input::Seen::Act;
        }
        let showing = lock(&self.showing).clone();
        match self.held.take_back(showing.as_deref()) {
            Err(e) => {
                *lock(&self.ended) = Some(Ended::Lost(e));
                input::Seen::Ended
            }
            Ok(back) => match (showing, back.claim) {
                (Some(id), Some(Err(error))) => {
                    *lock(&self.ended) = Some(Ended::Gone { id, error });
                    input::Seen::Ended
                }
                _ => {
                    *lock(&self.note) = Some("lease taken back · go on".into());
                    input::Seen::Back
                }
            },
        }
    }

    fn note(&self) -> Option<String> {
        lock(&self.note).clone()
    }
}
