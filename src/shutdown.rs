//! The daemon's stop: SIGINT and SIGTERM handled from the first moment of its start, a
//! graceful drain bounded by `--shutdown-grace`, and a second signal that stops at once.
//!
//! Why the handlers come first: the daemon used to install them only once its root was
//! created, its store open and the root locked, so a SIGTERM in that window (a service
//! manager stopping a unit that had just started) killed it by the signal (exit 143).
//! [`Stop::install`] runs before the root is touched; whatever part of the start has run
//! when a signal arrives checks [`Stop::requested`] (or is told through [`Stop::on_stop`])
//! and winds down, and the process exits 0.
//!
//! Nothing committed depends on how the process ends: a commit is durable when it returns,
//! an inbox file is removed only after the commit that took it, and an outcome committed
//! but not yet written is written at the next start. So the drain's deadline and a second
//! signal may end the process where it stands ([`std::process::exit`]): what an open
//! transaction held is rolled back and its input is still where it was.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};

type Hook = Box<dyn Fn() + Send>;

/// The process's stop request, shared by the file loop and the host.
pub struct Stop {
    signals: AtomicU32,
    hooks: Mutex<Vec<Hook>>,
    grace: Duration,
}

impl Stop {
    /// Handle SIGINT and SIGTERM from now on: the first starts the drain (the hooks run and
    /// the process is given `grace` to finish), a second one, or the grace's end, exits at
    /// once with status 0.
    pub fn install(grace: Duration) -> Result<Arc<Stop>> {
        let stop = Arc::new(Stop {
            signals: AtomicU32::new(0),
            hooks: Mutex::new(Vec::new()),
            grace,
        });
        let mut signals = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
        ])
        .map_err(|e| Error::io("signal handler", e))?;
        let s = stop.clone();
        std::thread::Builder::new()
            .name("dshq-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if s.signals.fetch_add(1, Ordering::SeqCst) == 0 {
                        tracing::info!(
                            signal = sig,
                            grace = %humantime::format_duration(s.grace),
                            "stopping: draining, then exiting"
                        );
                        s.start_grace();
                        s.run_hooks();
                    } else {
                        tracing::warn!(signal = sig, "a second signal: stopping at once");
                        std::process::exit(0);
                    }
                }
            })
            .map_err(|e| Error::io("signal thread", e))?;
        Ok(stop)
    }

    /// A stop nobody signals (a test's, or a caller that stops through other means).
    pub fn never() -> Arc<Stop> {
        Arc::new(Stop {
            signals: AtomicU32::new(0),
            hooks: Mutex::new(Vec::new()),
            grace: Duration::MAX,
        })
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        self.signals.load(Ordering::SeqCst) > 0
    }

    /// Call `f` when the stop is requested (at once if it already was). `f` runs on the
    /// signal thread: it must only set flags and send messages.
    pub fn on_stop(&self, f: impl Fn() + Send + 'static) {
        let mut hooks = self.hooks.lock().unwrap_or_else(|p| p.into_inner());
        if self.requested() {
            drop(hooks);
            f();
            return;
        }
        hooks.push(Box::new(f));
    }

    /// The drain's bound.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    fn run_hooks(&self) {
        let hooks = self.hooks.lock().unwrap_or_else(|p| p.into_inner());
        for h in hooks.iter() {
            h();
        }
    }

    fn start_grace(&self) {
        let grace = self.grace;
        if grace == Duration::MAX {
            return;
        }
        let _ = std::thread::Builder::new()
            .name("dshq-grace".into())
            .spawn(move || {
                std::thread::sleep(grace);
                grace_ran_out(grace);
                std::process::exit(0);
            });
    }
}

/// Log that the drain ran past its grace (whoever notices first: the grace's timer, or
/// the host giving up on its open connections).
pub fn grace_ran_out(grace: Duration) {
    tracing::warn!(
        grace = %humantime::format_duration(grace),
        "the drain ran past --shutdown-grace: stopping at once"
    );
}
