//! The channels' sender, started by the file loop once it holds the root (with or
//! without `--listen`): a second daemon that the root's lock refuses sends nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::channels::Channels;
use crate::daemon::{self, Waker};
use crate::root::Root;
use crate::shutdown::Stop;

/// What the file loop calls once it holds the root: start the channels' sender (when
/// there are channels), then hand the loop's [`Waker`] to `then`. The flag returned ends
/// the sender; it is set at the stop, and by the caller once the loop has ended.
pub fn start_with_the_loop(
    root: &Root,
    channels: Option<Channels>,
    stop: &Stop,
    then: impl FnOnce(Waker) + Send + 'static,
) -> (daemon::Started, Arc<AtomicBool>) {
    let sending = Arc::new(AtomicBool::new(false));
    {
        let sending = sending.clone();
        stop.on_stop(move || sending.store(true, Ordering::SeqCst));
    }
    let (root, flag) = (root.clone(), sending.clone());
    let started: daemon::Started = Box::new(move |waker| {
        if let Some(c) = channels.filter(|c| !c.is_empty()) {
            // Detached: it ends soon after the flag is set.
            crate::channels::deliveries::spawn(&root, &c, flag)?;
        }
        then(waker);
        Ok(())
    });
    (started, sending)
}
