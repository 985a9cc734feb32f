//! The daemon as an async host (`dshq daemon --listen ADDR`): the file loop, the HTTP
//! faces and the change broadcast in one process.
//!
//! - The file loop ([`crate::daemon`]) stays synchronous on its own thread, exactly the
//!   loop that runs without `--listen`: SQLite blocks anyway, and one thread with a
//!   channel cannot race itself. The host only rides along ([`crate::daemon::Link`]):
//!   after each pass it publishes what the pass committed, and a commit made over HTTP
//!   wakes it ([`crate::daemon::Waker`]) so outcome files are written at once.
//! - The host's services ([`crate::host`]) are built here once and handed to every face
//!   as one [`AppState`]; the faces' routes are merged on one router.
//! - At the stop the host drains ([`serve`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use crate::channels::Channels;
use crate::daemon::{self, Link};
use crate::error::{Error, Result};
use crate::host::changes::Changes;
use crate::host::db::Db;
use crate::host::ends::{self, Ends};
use crate::host::health::{self, Health, Probe};
use crate::host::provider::{self, Providers};
use crate::host::{listen, nofile, AppState, Limits};
use crate::root::Root;
use crate::shutdown::Stop;

/// The HTTP side's settings.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The ttl of the provider leases the host holds.
    pub lease_ttl: Duration,
    /// Release a held lease after this long without a reviewer's act.
    pub idle: Duration,
    /// Limits on callers.
    pub limits: Limits,
    /// What clients may hold open: timeouts, connection caps, the descriptor reserve.
    pub conns: listen::ConnLimits,
    /// The `/mcp` endpoint's settings.
    pub mcp: crate::mcp::http::HttpConfig,
    /// The A2A face's settings (`/a2a`, the agent card).
    pub a2a: crate::a2a::Config,
    /// `--metrics`: where to serve `/metrics` (and the probes), when given.
    pub metrics: Option<SocketAddr>,
    /// The identity provider of the config file's `[oidc]`, for the page's sign-in.
    pub oidc: Option<Arc<crate::host::oidc::Oidc>>,
}

/// Run the file loop and the HTTP host until `stop` is requested (SIGINT or SIGTERM),
/// then drain ([`serve`]).
pub fn run(
    root: &Root,
    config: &daemon::Config,
    channels: Option<Channels>,
    web: WebConfig,
    stop: Arc<Stop>,
) -> Result<()> {
    nofile::raise();
    let changes = Arc::new(Changes::new(&mut root.open_store()?)?);
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let slack = channels.clone();
    let (started, sending) =
        super::sender::start_with_the_loop(root, channels, &stop, move |waker| {
            let _ = started_tx.send(waker);
        });
    let file_loop = {
        let (root, config, changes, stop) =
            (root.clone(), config.clone(), changes.clone(), stop.clone());
        std::thread::Builder::new()
            .name("dshq-loop".into())
            .spawn(move || {
                let link = Link {
                    started: Some(started),
                    after_pass: Some(Box::new(move |store| changes.publish(store))),
                };
                let r = daemon::run(&root, &config, link, &stop);
                let _ = done_tx.send(());
                r
            })
            .map_err(|e| Error::io("file loop thread", e))?
    };
    let join = |t: std::thread::JoinHandle<Result<()>>| {
        let r = t
            .join()
            .unwrap_or_else(|_| Err(Error::io("file loop", std::io::Error::other("panicked"))));
        sending.end();
        r
    };
    // The loop sends its waker once it holds the root; a refusal (another daemon), or a
    // stop before the loop started, ends the thread first, and its result is ours.
    let Ok(waker) = started_rx.recv() else {
        return join(file_loop);
    };
    let db = Db::start(root, changes, waker.clone())?;
    let served = serve(root, db, web, slack.as_ref(), done_rx, &stop);
    // However the web ended, the loop stops too (it may be stopping already).
    waker.shutdown();
    let looped = join(file_loop);
    served.and(looped)
}

/// The host's services, built once the database thread runs.
struct Services {
    state: AppState,
    health: Arc<Health>,
    /// Stops the accept loop and tells streams and waits to end.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Heartbeats the shared leases in use and releases the idle ones.
    keeper: tokio::task::JoinHandle<()>,
    /// Ends what a revoked token holds open.
    revocations: tokio::task::JoinHandle<()>,
}

impl Services {
    /// Start the host's services: the shared provider leases (taking over this host's
    /// earlier life's), their keeper, and the revocation watch.
    async fn start(root: &Root, db: Db, web: &WebConfig) -> Result<Services> {
        let health = Arc::new(Health::default());
        health.set_loop_running(true);
        let host = provider::host_mark(root, web.idle)?;
        let providers = Providers::start(db.clone(), web.lease_ttl, web.idle, host).await?;
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
        let (stopping, shutdown) = tokio::sync::watch::channel(false);
        let ends = Arc::new(Ends::default());
        let revocations = tokio::spawn(ends::watch_revocations(ends.clone(), db.clone()));
        Ok(Services {
            state: AppState {
                db,
                providers,
                root: root.clone(),
                limits: web.limits,
                shutdown,
                ends,
                oidc: web.oidc.clone(),
            },
            health,
            stopping,
            keeper,
            revocations,
        })
    }

    fn probe(&self) -> Probe {
        Probe {
            health: self.health.clone(),
            db: self.state.db.clone(),
        }
    }
}

/// Every face's routes on one router: the web face (the API and the page), MCP at
/// `/mcp`, the channels' inbound routes, the probes. Returns what MCP holds (its reviews'
/// leases, released at the drain) beside the router.
fn routes(
    services: &Services,
    web: &WebConfig,
    channels: Option<&Channels>,
) -> Result<(Router, crate::mcp::http::Drain)> {
    let state = &services.state;
    let (mcp, mcp_reviews) = crate::mcp::http::routes(state, &web.mcp);
    let app = crate::web::app(state.clone())
        .merge(mcp)
        .merge(crate::a2a::routes(state, &web.a2a))
        .merge(crate::channels::routes(state, channels)?)
        .merge(health::probes(services.probe()))
        .layer(axum::middleware::from_fn(health::count_requests));
    Ok((app, mcp_reviews))
}

/// Serve the faces (and the metrics listener) until the stop, then drain: `/readyz` turns
/// 503, the listener stops accepting, open streams and long-polls end with a retry hint,
/// the host's provider leases are released (their claims return to pending at once), and
/// the connections still open are given until the grace's end ([`Stop`]) to finish.
fn serve(
    root: &Root,
    db: Db,
    web: WebConfig,
    channels: Option<&Channels>,
    mut loop_done: tokio::sync::oneshot::Receiver<()>,
    stop: &Stop,
) -> Result<()> {
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
        let services = Services::start(root, db, &web).await?;
        let metrics = match web.metrics {
            Some(addr) => Some(serve_metrics(addr, services.probe()).await?),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(web.listen)
            .await
            .map_err(|e| Error::io(web.listen.to_string(), e))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::io(web.listen.to_string(), e))?;
        tracing::info!("listening on http://{bound}");
        let (app, mcp_reviews) = routes(&services, &web, channels)?;
        let mut stop_wait = services.stopping.subscribe();
        let server = listen::serve(listener, app, web.conns, async move {
            let _ = stop_wait.wait_for(|s| *s).await;
        });
        let served = tokio::spawn(server);
        // Until the stop (or the loop ends by itself: an error).
        tokio::select! {
            _ = drain_rx.wait_for(|d| *d) => {}
            _ = &mut loop_done => {}
        }
        let r = drain(&services, &mcp_reviews, served, bound, grace).await;
        if let Some(m) = metrics {
            m.abort();
        }
        tracing::info!("web stopped");
        r
    })
}

/// The drain after the stop (see [`serve`]).
async fn drain(
    services: &Services,
    mcp_reviews: &crate::mcp::http::Drain,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    bound: SocketAddr,
    grace: Duration,
) -> Result<()> {
    tracing::info!("draining: no new connections, streams told to retry");
    let providers = &services.state.providers;
    services.health.set_draining();
    let _ = services.stopping.send(true);
    services.state.ends.end_all(ends::Ending::HostStopping);
    services.keeper.abort();
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
    services.revocations.abort();
    // A lease taken by a request that was still in flight when the drain began.
    providers.release_all().await;
    mcp_reviews.release_all().await;
    services.health.set_loop_running(false);
    r
}

/// How long the drain waits for open connections when no grace bounds it.
const DRAIN_WAIT_MAX: Duration = Duration::from_secs(3600);

/// Bind the metrics listener and serve `/metrics` and the probes on it (it stays up
/// through the drain, so `/readyz` can be watched turning 503).
async fn serve_metrics(addr: SocketAddr, probe: Probe) -> Result<tokio::task::JoinHandle<()>> {
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
