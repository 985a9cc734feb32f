//! The HTTP listener's accept loop: what a client can hold open, and for how long.
//!
//! Why not `axum::serve`: it turns hyper's header-read timeout off and accepts every
//! connection it can, so connections that send nothing, or stop halfway through their
//! headers, stay open for ever, and enough of them take every descriptor the process may
//! open. The file loop then cannot list the inbox or open the database ("Too many open
//! files") and ingestion stops until they close. Here nothing a client does can stop it:
//!
//! - **Header-read timeout.** hyper's HTTP/1 `header_read_timeout` (with a tokio timer)
//!   closes a connection whose request head is not complete within
//!   [`ConnLimits::header_read`]. hyper starts that timer whenever the connection waits
//!   for a request head: a new connection, and a kept-alive one after its response, so
//!   the same bound is the **idle keep-alive timeout** (a connection kept alive with no
//!   next request is closed when it runs out). A request being served (a long-poll, an
//!   event stream) is not waiting for a head and is never cut by it.
//! - **A cap on open connections**, in total ([`ConnLimits::max_conns`]) and per peer
//!   address ([`ConnLimits::max_per_peer`]), so that one client cannot take them all.
//! - **A reserve of descriptors** for the file loop and the store
//!   ([`ConnLimits::fd_reserve`]): the total cap is lowered, at start, to what the open-file
//!   limit leaves after the descriptors already open and the reserve.
//!
//! A connection over a cap is refused cheaply: one non-blocking write of a fixed
//! `503 Service Unavailable` (with `Retry-After`) and the socket is closed, with no task,
//! no parsing and no wait. `accept` failing for lack of descriptors (EMFILE, ENFILE) backs
//! off briefly instead of spinning.
//!
//! Stopping: [`serve`] takes a `stop` future. When it completes the loop stops accepting,
//! asks every open connection to end gracefully (hyper finishes the response in flight
//! and closes; an idle connection closes at once) and returns when they all have. The
//! caller decides when (the file loop ending, a signal, a drain) and how long to wait.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What clients may hold open.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// How long a connection may take to deliver a whole request head, counted from when
    /// it is ready for one (accepted, or its previous response sent): the header-read and
    /// idle keep-alive timeout.
    pub header_read: Duration,
    /// The most connections open at once.
    pub max_conns: usize,
    /// The most connections open at once from one peer address.
    pub max_per_peer: usize,
    /// Descriptors kept free for the file loop and the store: the connection cap is
    /// lowered to leave them under the open-file limit.
    pub fd_reserve: u64,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            header_read: Duration::from_secs(10),
            max_conns: 4096,
            max_per_peer: 2048,
            fd_reserve: 64,
        }
    }
}

/// The response a connection over a cap gets before it is closed.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
Content-Type: text/plain\r\nContent-Length: 28\r\nConnection: close\r\n\r\n\
too many connections; retry\n";

/// The connection cap for this process: `max_conns`, lowered so that the open
/// connections, the descriptors open now and the reserve fit under the soft open-file
/// limit. Under a very low limit the reserve is at most a quarter of it (the file loop
/// needs a dozen descriptors at most: the database's three, a directory listing, a file
/// being read, an atomic write's two, a hook's pipes), so connections still get a share.
/// `None` for the limit when it cannot be read (then `max_conns` alone).
pub fn effective_cap(limits: &ConnLimits, soft_limit: Option<u64>, open_now: u64) -> usize {
    match soft_limit {
        Some(soft) => {
            let reserve = limits.fd_reserve.min(soft / 4);
            let room = soft.saturating_sub(open_now.saturating_add(reserve));
            limits
                .max_conns
                .min(usize::try_from(room).unwrap_or(usize::MAX))
        }
        None => limits.max_conns,
    }
}

/// The soft `RLIMIT_NOFILE`, when it can be read and is finite.
fn soft_nofile() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// How many descriptors this process has open (`/proc/self/fd`), 0 when unknown.
fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count().saturating_sub(1) as u64)
        .unwrap_or(0)
}

/// The open connections, in total and by peer.
#[derive(Default)]
struct Open {
    total: usize,
    by_peer: HashMap<IpAddr, usize>,
}

/// One admitted connection's place in [`Open`], given back when it ends.
struct Slot {
    open: Arc<Mutex<Open>>,
    peer: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                open.by_peer.remove(&self.peer);
            }
        }
    }
}

/// Admit a connection from `peer` under the caps, or say which cap refuses it.
fn admit(
    open: &Arc<Mutex<Open>>,
    peer: IpAddr,
    cap: usize,
    per_peer: usize,
) -> Result<Slot, &'static str> {
    let mut o = open.lock().unwrap_or_else(|e| e.into_inner());
    if o.total >= cap {
        return Err("the connection cap");
    }
    let mine = o.by_peer.get(&peer).copied().unwrap_or(0);
    if mine >= per_peer {
        return Err("the per-peer connection cap");
    }
    o.total += 1;
    *o.by_peer.entry(peer).or_insert(0) += 1;
    Ok(Slot {
        open: open.clone(),
        peer,
    })
}

/// Refuse a connection without serving it: the fixed 503 if the socket takes it at once,
/// then close.
fn refuse(stream: TcpStream) {
    let _ = stream.try_write(REFUSED);
    drop(stream);
}

/// Serve `app` on `listener` under `limits` until `stop` completes; then stop accepting,
/// end every connection gracefully and return once they have all closed.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    stop: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let cap = effective_cap(&limits, soft_nofile(), open_fds());
    if cap < limits.max_conns {
        tracing::info!(
            cap,
            reserve = limits.fd_reserve,
            "the open-file limit lowers the connection cap"
        );
    }
    let per_peer = limits.max_per_peer.min(cap).max(1);
    let open = Arc::new(Mutex::new(Open::default()));
    let (ending_tx, ending_rx) = watch::channel(false);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let mut tasks = tokio::task::JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    let mut warned_at: Option<tokio::time::Instant> = None;
    loop {
        let accepted = tokio::select! {
            () = &mut stop => break,
            a = listener.accept() => a,
            // Reap finished connections' tasks as they end.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors (or another passing failure): wait a moment, the
                // header timeout frees them; never spin on the error.
                let now = tokio::time::Instant::now();
                if warned_at.is_none_or(|t| now - t > Duration::from_secs(10)) {
                    warned_at = Some(now);
                    tracing::warn!(error = %e, "cannot accept a connection");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let slot = match admit(&open, peer.ip(), cap, per_peer) {
            Ok(slot) => slot,
            Err(which) => {
                tracing::debug!(peer = %peer, which, "refused a connection");
                refuse(stream);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (builder, app, mut ending) = (builder.clone(), app.clone(), ending_rx.clone());
        tasks.spawn(async move {
            let _slot = slot;
            // The `dshq_http_connections_open` gauge, while the connection lives.
            let _counted = crate::metrics::Held::connection();
            // Who is calling, for what judges by peer (the login form's wrong tokens).
            let app = tower::ServiceExt::map_request(
                app,
                move |mut r: hyper::Request<hyper::body::Incoming>| {
                    r.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                    r
                },
            );
            let service = TowerToHyperService::new(app);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(peer = %peer, error = %e, "connection ended");
                    }
                    return;
                }
                _ = ending.wait_for(|e| *e) => {}
            }
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        });
    }
    drop(listener);
    let _ = ending_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_the_reserve_under_the_open_file_limit() {
        let l = ConnLimits {
            max_conns: 1000,
            fd_reserve: 64,
            ..ConnLimits::default()
        };
        assert_eq!(effective_cap(&l, Some(1024), 30), 930);
        assert_eq!(
            effective_cap(&l, Some(128), 30),
            66,
            "a quarter of 128 is kept"
        );
        assert_eq!(effective_cap(&l, Some(64), 60), 0);
        assert_eq!(effective_cap(&l, Some(1 << 20), 30), 1000);
        assert_eq!(effective_cap(&l, None, 30), 1000);
    }

    #[test]
    fn the_refusal_is_one_whole_response() {
        let text = std::str::from_utf8(REFUSED).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(
            head.contains(&format!("Content-Length: {}", body.len())),
            "{text:?}"
        );
    }

    #[test]
    fn a_peer_over_its_cap_is_refused_and_its_slots_come_back() {
        let open = Arc::new(Mutex::new(Open::default()));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let s1 = admit(&open, a, 3, 2).unwrap();
        let s2 = admit(&open, a, 3, 2).unwrap();
        assert!(admit(&open, a, 3, 2).is_err(), "per peer");
        let s3 = admit(&open, b, 3, 2).unwrap();
        assert!(admit(&open, b, 3, 2).is_err(), "in total");
        drop((s1, s2, s3));
        let o = open.lock().unwrap();
        assert_eq!((o.total, o.by_peer.len()), (0, 0));
    }
}
