//! Waits for one request's end: what a long-poll (`GET .../outcome?wait=`) parks on.
//!
//! Why not the change broadcast: every subscriber of [`super::changes::Changes`] receives
//! every change. A thousand long-polls held on a burst of ten thousand accepted files are
//! ten million wake-ups, each to learn "not mine", on the same two cores as the file loop
//! that is committing the burst (and each lag re-reads the store). Here a waiter registers
//! under its request's id, and a final change wakes only the waiters of that id: the cost
//! of a commit does not grow with the number of waiters.
//!
//! Register before reading the store (a final change committed in between still wakes
//! the waiter); the registration is removed when its [`FinalWait`] is dropped (a client
//! that hangs up leaves nothing behind).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The registry of waiters, by request id.
#[derive(Default)]
pub struct Waits {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    by_id: HashMap<String, Vec<(u64, oneshot::Sender<()>)>>,
}

impl Waits {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait for the next final change of `id`.
    pub fn register(self: &Arc<Self>, id: &str) -> FinalWait {
        let (tx, rx) = oneshot::channel();
        let mut inner = self.lock();
        inner.next += 1;
        let key = inner.next;
        inner
            .by_id
            .entry(id.to_string())
            .or_default()
            .push((key, tx));
        FinalWait {
            waits: self.clone(),
            id: id.to_string(),
            key,
            rx,
        }
    }

    /// A final change of `id` was published: wake its waiters.
    pub fn finished(&self, id: &str) {
        let woken = self.lock().by_id.remove(id);
        for (_, tx) in woken.into_iter().flatten() {
            // A waiter that went away meanwhile is fine.
            let _ = tx.send(());
        }
    }

    /// How many waiters are registered (for tests and logs).
    pub fn len(&self) -> usize {
        self.lock().by_id.values().map(Vec::len).sum()
    }

    /// Whether no waiter is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One registered wait; dropping it removes the registration.
pub struct FinalWait {
    waits: Arc<Waits>,
    id: String,
    key: u64,
    rx: oneshot::Receiver<()>,
}

impl FinalWait {
    /// Until a final change of the request is published. `false` when it never can be
    /// (the registry is gone: the host is stopping).
    pub async fn finished(&mut self) -> bool {
        (&mut self.rx).await.is_ok()
    }
}

impl Drop for FinalWait {
    fn drop(&mut self) {
        let mut inner = self.waits.lock();
        if let Some(list) = inner.by_id.get_mut(&self.id) {
            list.retain(|(k, _)| *k != self.key);
            if list.is_empty() {
                inner.by_id.remove(&self.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_final_change_wakes_only_the_waiters_of_its_id() {
        let waits = Arc::new(Waits::default());
        let mut a1 = waits.register("a");
        let mut a2 = waits.register("a");
        let mut b = waits.register("b");
        assert_eq!(waits.len(), 3);
        waits.finished("a");
        assert!(a1.finished().await);
        assert!(a2.finished().await);
        // b was not woken: its wait is still pending.
        assert!(matches!(
            b.rx.try_recv(),
            Err(oneshot::error::TryRecvError::Empty)
        ));
        drop((a1, a2));
        assert_eq!(waits.len(), 1);
        drop(b);
        assert!(waits.is_empty(), "a dropped wait leaves nothing behind");
    }
}
