//! The channels' sender, started by the file loop once it holds the root (with or
//! without `--listen`): a second daemon that the root's lock refuses sends nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::channels::deliveries::Running;

use crate::channels::Channels;
use crate::daemon::{self, Waker};
use crate::root::Root;
use crate::shutdown::Stop;

/// The channels' sender, once started: [`Sending::end`] ends it.
#[derive(Clone, Default)]
pub struct Sending {
    flag: Arc<AtomicBool>,
    running: Arc<Mutex<Option<Running>>>,
}

impl Sending {
    /// End the sender and wait for it (the attempts in flight are dropped, their rows
    /// kept for the next start): the caller calls it once the file loop has ended, so the
    /// daemon exits with nothing of the sender still running.
    pub fn end(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let running = self.running.lock().ok().and_then(|mut r| r.take());
        if let Some(r) = running {
            r.end();
        }
    }
}

/// What the file loop calls once it holds the root: start the channels' sender (when
/// there are channels), then hand the loop's [`Waker`] to `then`. The sender's flag is
/// set at the stop; the caller ends it ([`Sending::end`]) once the loop has ended.
pub fn start_with_the_loop(
    root: &Root,
    channels: Option<Channels>,
    stop: &Stop,
    then: impl FnOnce(Waker) + Send + 'static,
) -> (daemon::Started, Sending) {
    let sending = Sending::default();
    {
        let flag = sending.flag.clone();
        stop.on_stop(move || flag.store(true, Ordering::SeqCst));
    }
    let (root, started_sending) = (root.clone(), sending.clone());
    let started: daemon::Started = Box::new(move |waker| {
        if let Some(c) = channels.filter(|c| !c.is_empty()) {
            let running =
                crate::channels::deliveries::spawn(&root, &c, started_sending.flag.clone())?;
            if let Ok(mut slot) = started_sending.running.lock() {
                *slot = Some(running);
            }
        }
        then(waker);
        Ok(())
    });
    (started, sending)
}
