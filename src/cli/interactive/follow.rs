//! The walk's queue and, with `--follow`, its wait for more.
//!
//! The walk takes the context's queue in the order [`crate::app::feed::review_queue`]
//! gives (deadline first, then oldest), one request at a time, re-reading the queue
//! before each so a request that arrived meanwhile takes its place by deadline. A request
//! shown once is not shown again in this session (one "left for later" stays claimed by
//! the session until its lease is released), so [`Queue`] remembers the ids it showed.
//!
//! With `--follow` an empty queue is not the end: the session waits, woken when the
//! root directory changes (every commit writes the database's WAL there; the same notify
//! watch `dshq watch` uses) or at the latest after [`TICK`], so a missed or coalesced
//! event costs a second, never a request, and an idle screen does one indexed read a
//! second at most. When a request arrives after the screen went idle it rings the
//! terminal bell.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use crate::app;
use crate::error::Result;
use crate::store::{ListFilter, RequestRow, Store};

/// The longest an idle follow loop sleeps without a file-system event.
pub const TICK: Duration = Duration::from_secs(1);

/// Where the reviewer stands in the walk.
#[derive(Debug, Default)]
pub struct Queue {
    shown: HashSet<String>,
    done: usize,
    /// `answer`'s filters (`--agent`, `--intent`, `--grep`): the walk takes only what they
    /// match, now and while it follows.
    only: ListFilter,
}

/// The next request to show and where it stands: "`position` of `total`".
pub struct Next {
    /// The request.
    pub row: RequestRow,
    /// Its place in this session's walk, from 1.
    pub position: usize,
    /// Requests shown so far plus those still waiting.
    pub total: usize,
}

impl Queue {
    /// A walk that takes only the requests `only` matches.
    pub fn only(only: ListFilter) -> Queue {
        Queue {
            only,
            ..Default::default()
        }
    }

    /// What the filters take, for the screen's status lines: ` matching agent A, intent
    /// I, text "T"`, or nothing without filters (asker-supplied text is made one line).
    pub fn matching(&self) -> String {
        let mut parts = Vec::new();
        if let Some(a) = &self.only.agent {
            parts.push(format!("agent {}", crate::text::one_line(a)));
        }
        if let Some(i) = &self.only.intent {
            parts.push(format!("intent {i}"));
        }
        if let Some(g) = &self.only.grep {
            parts.push(format!("text {:?}", crate::text::one_line(g)));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" matching {}", parts.join(", "))
        }
    }

    /// The next request not shown yet in this session, or `None` when none is left.
    pub fn next(
        &mut self,
        store: &mut Store,
        context: &str,
        lease_id: i64,
    ) -> Result<Option<Next>> {
        let queue = app::feed::review_queue(store, context, lease_id, &self.only)?;
        let mut left = queue
            .into_iter()
            .filter(|r| r.id.as_ref().is_some_and(|id| !self.shown.contains(id)));
        let Some(row) = left.next() else {
            return Ok(None);
        };
        let rest = left.count();
        self.shown.insert(row.id.clone().unwrap_or_default());
        self.done += 1;
        Ok(Some(Next {
            row,
            position: self.done,
            total: self.done + rest,
        }))
    }

    /// How many requests not shown yet are waiting (nothing is marked shown).
    pub fn waiting(&self, store: &mut Store, context: &str, lease_id: i64) -> Result<usize> {
        let queue = app::feed::review_queue(store, context, lease_id, &self.only)?;
        Ok(queue
            .iter()
            .filter(|r| r.id.as_ref().is_some_and(|id| !self.shown.contains(id)))
            .count())
    }

    /// Forget that the last request was shown (it could not be claimed: it is someone
    /// else's now or it ended) so the count stays honest; it is still never shown again.
    pub fn not_shown(&mut self) {
        self.done = self.done.saturating_sub(1);
    }
}

/// Wakes the follow loop when the root changes, or after [`TICK`].
pub struct Wake {
    rx: Receiver<()>,
    // Kept alive while the loop waits; `None` when no watch could be set up.
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Wake {
    /// Watch `dir` (the root); on failure the tick alone wakes the loop.
    pub fn on(dir: &Path) -> Wake {
        let (tx, rx) = mpsc::channel::<()>();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = &res {
                if matches!(ev.kind, notify::EventKind::Access(_)) {
                    return;
                }
            }
            let _ = tx.send(());
        })
        .and_then(|mut w| w.watch(dir, RecursiveMode::NonRecursive).map(|_| w));
        let watcher = match watcher {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "no file-system events; polling every {TICK:?}");
                None
            }
        };
        Wake {
            rx,
            _watcher: watcher,
        }
    }

    /// Forget the changes seen so far (the screen's own writes while a request was up).
    pub fn drain(&self) {
        while self.rx.try_recv().is_ok() {}
    }

    /// Sleep until the root changes or [`TICK`] passes.
    pub fn wait(&self) {
        match self.rx.recv_timeout(TICK) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(TICK),
        }
        self.drain();
    }
}

/// Ring the terminal's bell (on stderr, where the screen is drawn).
pub fn bell() {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"\x07");
    let _ = err.flush();
}
