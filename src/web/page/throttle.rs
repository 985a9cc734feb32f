//! Wrong tokens at the login form, per peer address: after a few, the next try from that
//! address waits, and each wrong token after that doubles the wait.
//!
//! Why: a token is 256 random bits, so guessing is hopeless; but every try costs a hash
//! on the host, and a form that answers 300 wrong tokens in a tenth of a second invites a
//! flood. So the first [`FREE`] wrong tokens from an address are judged at once (a person
//! mistyping), then the address waits 1 s after its last wrong token, then 2, 4, ... up to
//! [`MAX_WAIT`]; a try inside the wait is answered 429 with `Retry-After`, without looking
//! at its token (no hash). A right token resets the address. Tries are counted by the
//! peer's IP address (behind a reverse proxy, the proxy's: every user of it then waits
//! together, which is why the wait is capped and short). The table forgets an address
//! idle for [`FORGET_AFTER`], and holds at most [`MAX_PEERS`] of them.
//!
//! Pure: the time is passed in, so the rule is tested alone.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong tokens an address may give before it waits.
pub const FREE: u32 = 5;

/// The longest wait.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// An address idle this long is forgotten.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);

/// The most addresses the table keeps (the idle ones are dropped first, then the oldest).
pub const MAX_PEERS: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Wrong {
    count: u32,
    last: Instant,
}

impl Wrong {
    /// When the next try from this address is judged.
    fn until(&self) -> Option<Instant> {
        let over = self.count.checked_sub(FREE)?;
        let wait = Duration::from_secs(1u64 << over.min(16)).min(MAX_WAIT);
        Some(self.last + wait)
    }
}

/// The wrong tokens by address.
#[derive(Debug, Default)]
pub struct Throttle {
    peers: Mutex<HashMap<IpAddr, Wrong>>,
}

impl Throttle {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Wrong>> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How long `peer` must still wait at `now` before a try of its is judged; `None`:
    /// judge it now.
    pub fn wait(&self, peer: IpAddr, now: Instant) -> Option<Duration> {
        let until = self.table().get(&peer)?.until()?;
        (until > now).then(|| until - now)
    }

    /// `peer` gave a wrong token at `now`.
    pub fn wrong(&self, peer: IpAddr, now: Instant) {
        let mut t = self.table();
        if t.len() >= MAX_PEERS && !t.contains_key(&peer) {
            t.retain(|_, w| now.saturating_duration_since(w.last) < FORGET_AFTER);
            if t.len() >= MAX_PEERS {
                if let Some(oldest) = t.iter().min_by_key(|(_, w)| w.last).map(|(p, _)| *p) {
                    t.remove(&oldest);
                }
            }
        }
        let w = t.entry(peer).or_insert(Wrong {
            count: 0,
            last: now,
        });
        if now.saturating_duration_since(w.last) >= FORGET_AFTER {
            w.count = 0;
        }
        w.count = w.count.saturating_add(1);
        w.last = now;
    }

    /// `peer` gave a right token: it starts afresh.
    pub fn right(&self, peer: IpAddr) {
        self.table().remove(&peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_wrong_tokens_are_free_then_the_wait_doubles_to_its_cap() {
        let t = Throttle::default();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t0 = Instant::now();
        for _ in 0..FREE {
            assert_eq!(t.wait(a, t0), None);
            t.wrong(a, t0);
        }
        assert_eq!(t.wait(a, t0), Some(Duration::from_secs(1)));
        assert_eq!(t.wait(b, t0), None, "another address is not held");
        let mut now = t0;
        for expect in [1, 2, 4, 8, 16, 32, 60, 60] {
            let w = t.wait(a, now).expect("waits");
            assert_eq!(w, Duration::from_secs(expect));
            now += w;
            assert_eq!(t.wait(a, now), None, "judged once the wait is over");
            t.wrong(a, now);
        }
        t.right(a);
        assert_eq!(t.wait(a, now), None, "a right token resets it");
        // Forgotten after a long quiet.
        for _ in 0..FREE {
            t.wrong(b, t0);
        }
        t.wrong(b, t0 + FORGET_AFTER);
        assert_eq!(t.wait(b, t0 + FORGET_AFTER), None);
    }

    #[test]
    fn the_table_stays_bounded() {
        let t = Throttle::default();
        let now = Instant::now();
        for i in 0..(MAX_PEERS as u32 + 10) {
            t.wrong(IpAddr::from(i.to_be_bytes()), now);
        }
        assert!(t.table().len() <= MAX_PEERS);
    }
}
