//! `GET /healthz`, `GET /readyz` (on the API listener and the metrics listener) and
//! `GET /metrics` (on the metrics listener only).
//!
//! Both probes are unauthenticated and say one word: a load balancer or a container's
//! health check needs no token, and an anonymous caller learns nothing but "up" or
//! "ready". `/healthz` answers 200 while the process serves HTTP at all. `/readyz` answers
//! 200 only while the host should get work: the store answers (a read within
//! [`STORE_PROBE`]), the file loop (and its inbox watch) runs, and no drain has begun;
//! otherwise 503 with the reason's one word (`draining`, `store`, `inbox`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::db::Db;

/// How long `/readyz` waits for the store.
pub const STORE_PROBE: Duration = Duration::from_secs(2);

/// What the probes report, set by the host as it starts, runs and drains.
#[derive(Debug, Default)]
pub struct Health {
    loop_running: AtomicBool,
    draining: AtomicBool,
}

impl Health {
    /// The file loop started (true) or ended (false).
    pub fn set_loop_running(&self, running: bool) {
        self.loop_running.store(running, Ordering::SeqCst);
    }

    /// The drain began: `/readyz` turns 503 for good.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the drain began.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// What the probe handlers read.
#[derive(Clone)]
pub struct Probe {
    /// The host's state.
    pub health: Arc<Health>,
    /// The database thread (the store probe).
    pub db: Db,
}

/// `/healthz` and `/readyz`.
pub fn probes(p: Probe) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(p)
}

/// The metrics listener's routes: the probes and `/metrics`.
pub fn metrics_routes(p: Probe) -> Router {
    let scrape = Router::new()
        .route("/metrics", get(metrics))
        .with_state(p.clone());
    probes(p).merge(scrape)
}

fn word(status: StatusCode, w: &'static str) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        format!("{w}\n"),
    )
        .into_response()
}

async fn healthz() -> Response {
    word(StatusCode::OK, "ok")
}

async fn readyz(State(p): State<Probe>) -> Response {
    if p.health.draining() {
        return word(StatusCode::SERVICE_UNAVAILABLE, "draining");
    }
    if !p.health.loop_running.load(Ordering::SeqCst) {
        return word(StatusCode::SERVICE_UNAVAILABLE, "inbox");
    }
    let answered = tokio::time::timeout(STORE_PROBE, p.db.read(|store| store.clock_now())).await;
    match answered {
        Ok(Ok(_)) => word(StatusCode::OK, "ready"),
        _ => word(StatusCode::SERVICE_UNAVAILABLE, "store"),
    }
}

async fn metrics(State(p): State<Probe>) -> Response {
    let Some(m) = crate::metrics::get() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match p.db.read(crate::app::gauges::read).await {
        Ok(g) => m.set_gauges(&g),
        Err(e) => tracing::warn!(error = %e, "metrics: cannot read the store's gauges"),
    }
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        m.encode(),
    )
        .into_response()
}

/// Middleware: count each HTTP request by its route template and status.
pub async fn count_requests(req: Request, next: Next) -> Response {
    let Some(m) = crate::metrics::get() else {
        return next.run(req).await;
    };
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    // A closed set: a client may send any token as its method.
    let method: &'static str = match req.method().as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    };
    let resp = next.run(req).await;
    m.http(&route, method, resp.status().as_u16());
    resp
}
