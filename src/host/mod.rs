//! The daemon as an async host (`dshq daemon --listen ADDR`): the file loop, the HTTP
//! API and the change broadcast in one process.
//!
//! - The file loop ([`crate::daemon`]) stays synchronous on its own thread, exactly the
//!   loop that runs without `--listen`: SQLite blocks anyway, and one thread with a
//!   channel cannot race itself. The host only rides along ([`crate::daemon::Link`]):
//!   after each pass it publishes what the pass committed, and a commit made by the web
//!   wakes it ([`crate::daemon::Waker`]) so outcome files are written at once.
//! - The web's database work runs on one blocking thread that owns its connection
//!   ([`db::Db`]); the tokio workers only parse, route and wait.
//! - After every commit the host broadcasts what changed ([`changes::Changes`]); the
//!   event stream is fed by that broadcast, and a long-poll is woken by its own
//!   request's final change ([`waits`]).
//! - The host holds a context's provider lease while reviewers act over the web
//!   ([`provider::Providers`]).
//! - Each connection holds a descriptor: the host raises its soft open-file limit to
//!   the hard one at start ([`nofile`]), and the accept loop ([`listen`]) caps what
//!   clients hold open (a header-read timeout, connection caps in total and per peer, a
//!   reserve of descriptors), so no client can starve the file loop of descriptors.

pub mod changes;
pub mod channel;
pub mod db;
pub mod deliveries;
pub mod email;
pub mod ends;
pub mod health;
pub mod listen;
pub mod mail_key;
pub mod nofile;
pub mod provider;
pub mod slack;
pub mod waits;
pub mod webhook;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::daemon::{self, Link};
use crate::error::{Error, Result};
use crate::root::Root;
use crate::shutdown::Stop;

/// The web side's settings.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The ttl of the provider leases the host holds.
    pub lease_ttl: Duration,
    /// Release a held lease after this long without a reviewer's act.
    pub idle: Duration,
    /// Limits on callers.
    pub limits: crate::web::Limits,
    /// What clients may hold open: timeouts, connection caps, the descriptor reserve.
    pub conns: listen::ConnLimits,
    /// The `/mcp` endpoint's settings.
    pub mcp: crate::mcp::http::HttpConfig,
    /// `--metrics`: where to serve `/metrics` (and the probes), when given.
    pub metrics: Option<SocketAddr>,
}

/// Parse `--listen`: `HOST:PORT`, or a bare port (loopback).
pub fn parse_listen(s: &str) -> std::result::Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>().map_err(|_| {
        format!("{s:?} is not an address: give PORT (loopback) or HOST:PORT such as 127.0.0.1:7465")
    })
}

/// Run the file loop and the web until `stop` is requested (SIGINT or SIGTERM), then
/// drain (`serve`, below).
pub fn run(root: &Root, config: &daemon::Config, web: WebConfig, stop: Arc<Stop>) -> Result<()> {
    nofile::raise();
    let changes = Arc::new(changes::Changes::new(&mut root.open_store()?)?);
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let file_loop = {
        let (root, config, changes, stop) =
            (root.clone(), config.clone(), changes.clone(), stop.clone());
        std::thread::Builder::new()
            .name("dshq-loop".into())
            .spawn(move || {
                let link = Link {
                    started: started_tx,
                    after_pass: Box::new(move |store| changes.publish(store)),
                };
                let r = daemon::run_linked(&root, &config, Some(link), &stop);
                let _ = done_tx.send(());
                r
            })
            .map_err(|e| Error::io("file loop thread", e))?
    };
    let join = |t: std::thread::JoinHandle<Result<()>>| {
        t.join()
            .unwrap_or_else(|_| Err(Error::io("file loop", std::io::Error::other("panicked"))))
    };
    // The loop sends its waker once it holds the root; a refusal (another daemon), or a
    // stop before the loop started, ends the thread first, and its result is ours.
    let Ok(waker) = started_rx.recv() else {
        return join(file_loop);
    };
    let slack = config.channels.as_ref().and_then(|c| c.slack.clone());
    let served = serve(root, changes, waker.clone(), web, slack, done_rx, &stop);
    // However the web ended, the loop stops too (it may be stopping already).
    waker.shutdown();
    let looped = join(file_loop);
    served.and(looped)
}

/// Serve the API (and the metrics listener) until the stop, then drain: `/readyz` turns
/// 503, the listener stops accepting, open streams and long-polls end with a retry hint,
/// the host's provider leases are released (their claims return to pending at once), and
/// the connections still open are given until the grace's end ([`Stop`]) to finish.
fn serve(
    root: &Root,
    changes: Arc<changes::Changes>,
    waker: daemon::Waker,
    web: WebConfig,
    slack: Option<slack::Slack>,
    mut loop_done: tokio::sync::oneshot::Receiver<()>,
    stop: &Stop,
) -> Result<()> {
    let db = db::Db::start(root, changes, waker)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("dshq-web")
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    let (drain_tx, mut drain_rx) = tokio::sync::watch::channel(false);
    stop.on_stop(move || {
        let _ = drain_tx.send(true);
    });
    let grace = stop.grace().min(DRAIN_WAIT_MAX);
    rt.block_on(async move {
        let health = Arc::new(health::Health::default());
        health.set_loop_running(true);
        let probe = health::Probe {
            health: health.clone(),
            db: db.clone(),
        };
        let metrics = match web.metrics {
            Some(addr) => Some(serve_metrics(addr, probe.clone()).await?),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(web.listen)
            .await
            .map_err(|e| Error::io(web.listen.to_string(), e))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::io(web.listen.to_string(), e))?;
        tracing::info!("listening on http://{bound}");
        let host = provider::host_mark(root, web.idle)?;
        let providers =
            provider::Providers::start(db.clone(), web.lease_ttl, web.idle, host).await?;
        let keeper = {
            let p = providers.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(p.keep_every());
                loop {
                    every.tick().await;
                    p.keep().await;
                }
            })
        };
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let ends = Arc::new(ends::Ends::default());
        let revocations = tokio::spawn(ends::watch_revocations(ends.clone(), db.clone()));
        let state = crate::web::AppState {
            db,
            providers: providers.clone(),
            root: root.clone(),
            limits: web.limits,
            shutdown: stop_rx,
            ends: ends.clone(),
        };
        let (mcp, mcp_reviews) = crate::mcp::http::routes(&state, &web.mcp);
        let slack = crate::web::slack::routes(&state, root, slack.as_ref())?;
        let app = crate::web::app(state)
            .merge(mcp)
            .merge(slack)
            .merge(health::probes(probe))
            .layer(axum::middleware::from_fn(health::count_requests));
        let mut stop_wait = stop_tx.subscribe();
        let server = listen::serve(listener, app, web.conns, async move {
            let _ = stop_wait.wait_for(|s| *s).await;
        });
        let served = tokio::spawn(server);
        // Until the stop (or the loop ends by itself: an error).
        tokio::select! {
            _ = drain_rx.wait_for(|d| *d) => {}
            _ = &mut loop_done => {}
        }
        tracing::info!("draining: no new connections, streams told to retry");
        health.set_draining();
        let _ = stop_tx.send(true);
        ends.end_all(ends::Ending::HostStopping);
        keeper.abort();
        // Explicitly, so their claims return now rather than at the lease's expiry: the
        // page's and the MCP reviews'.
        providers.release_all().await;
        mcp_reviews.release_all().await;
        let r = match tokio::time::timeout(grace, served).await {
            Ok(Ok(r)) => r.map_err(|e| Error::io(bound.to_string(), e)),
            Ok(Err(_)) => Ok(()),
            Err(_) => {
                crate::shutdown::grace_ran_out(grace);
                Ok(())
            }
        };
        revocations.abort();
        // A lease taken by a request that was still in flight when the drain began.
        providers.release_all().await;
        mcp_reviews.release_all().await;
        health.set_loop_running(false);
        if let Some(m) = metrics {
            m.abort();
        }
        tracing::info!("web stopped");
        r
    })
}

/// How long the drain waits for open connections when no grace bounds it.
const DRAIN_WAIT_MAX: Duration = Duration::from_secs(3600);

/// Bind the metrics listener and serve `/metrics` and the probes on it (it stays up
/// through the drain, so `/readyz` can be watched turning 503).
async fn serve_metrics(
    addr: SocketAddr,
    probe: health::Probe,
) -> Result<tokio::task::JoinHandle<()>> {
    crate::metrics::enable();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::io(addr.to_string(), e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::io(addr.to_string(), e))?;
    tracing::info!("metrics on http://{bound}/metrics");
    let app = health::metrics_routes(probe);
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the metrics listener failed");
        }
    }))
}
