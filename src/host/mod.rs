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
pub mod db;
pub mod ends;
pub mod listen;
pub mod nofile;
pub mod provider;
pub mod waits;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::daemon::{self, Link};
use crate::error::{Error, Result};
use crate::root::Root;

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

/// Run the file loop and the web until SIGINT or SIGTERM.
pub fn run(root: &Root, config: &daemon::Config, web: WebConfig) -> Result<()> {
    nofile::raise();
    let changes = Arc::new(changes::Changes::new(&mut *root.open_store()?)?);
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let file_loop = {
        let (root, config, changes) = (root.clone(), config.clone(), changes.clone());
        std::thread::Builder::new()
            .name("dshq-loop".into())
            .spawn(move || {
                let link = Link {
                    started: started_tx,
                    after_pass: Box::new(move |store| changes.publish(store)),
                };
                let r = daemon::run_linked(&root, &config, Some(link));
                let _ = done_tx.send(());
                r
            })
            .map_err(|e| Error::io("file loop thread", e))?
    };
    let join = |t: std::thread::JoinHandle<Result<()>>| {
        t.join()
            .unwrap_or_else(|_| Err(Error::io("file loop", std::io::Error::other("panicked"))))
    };
    // The loop sends its waker once it holds the root; a refusal (another daemon) ends
    // the thread first, and its error is ours.
    let Ok(waker) = started_rx.recv() else {
        return join(file_loop);
    };
    let served = serve(root, changes, waker.clone(), web, done_rx);
    // However the web ended, the loop stops too (it may be stopping already).
    waker.shutdown();
    let looped = join(file_loop);
    served.and(looped)
}

fn serve(
    root: &Root,
    changes: Arc<changes::Changes>,
    waker: daemon::Waker,
    web: WebConfig,
    loop_done: tokio::sync::oneshot::Receiver<()>,
) -> Result<()> {
    let db = db::Db::start(root, changes, waker)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("dshq-web")
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    rt.block_on(async move {
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
            ends,
        };
        let mcp = crate::mcp::http::routes(&state, &web.mcp);
        let app = crate::web::app(state).merge(mcp);
        let mut stop_wait = stop_tx.subscribe();
        let server = listen::serve(listener, app, web.conns, async move {
            let _ = loop_done.await;
            let _ = stop_tx.send(true);
        });
        let served = tokio::spawn(server);
        // Wait for the loop to end, then give open connections a moment to finish.
        let _ = stop_wait.wait_for(|s| *s).await;
        let r = match tokio::time::timeout(Duration::from_secs(5), served).await {
            Ok(Ok(r)) => r.map_err(|e| Error::io(bound.to_string(), e)),
            _ => Ok(()),
        };
        keeper.abort();
        revocations.abort();
        providers.release_all().await;
        tracing::info!("web stopped");
        r
    })
}
