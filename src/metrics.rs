//! Prometheus metrics (`dshq daemon --metrics ADDR`), in the OpenMetrics text format of the
//! `prometheus-client` crate, served on their own listener ([`crate::host::health`]).
//!
//! Why one process-wide registry ([`enable`], [`get`]): what is measured happens on many
//! threads that share nothing else (the file loop, the database thread, the HTTP workers),
//! and threading a handle through each would put the metrics into every signature. When
//! `--metrics` is not given, [`get`] is `None` and each recording point costs one load.
//!
//! Labels are bounded by construction: routes are the router's templates
//! (`/api/v1/requests/{id}`, never a request id), statuses and codes are closed sets, and
//! the one label an asker chooses, the context, appears only on the open-request gauge,
//! for at most [`MAX_CONTEXTS`] contexts (the largest; the rest are summed as `_other`).
//! Counts that the store holds (open requests, leases, outcome files pending) are read from
//! it at each scrape, so they are right whatever process committed them; counts of what
//! happens (ingest verdicts, changes, HTTP requests, latencies) are counted as it happens,
//! since this process started.

use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::app::gauges::Gauges;

/// The most contexts the open-request gauge names; the others are summed as `_other`.
pub const MAX_CONTEXTS: usize = 50;

/// The label value that stands for the contexts beyond [`MAX_CONTEXTS`].
pub const OTHER_CONTEXTS: &str = "_other";

/// `route`, `method` and `status` of an HTTP request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The route template that matched (`/api/v1/requests/{id}`), or `unmatched`.
    pub route: String,
    /// The method.
    pub method: String,
    /// The response status.
    pub status: u16,
}

/// An ingest verdict: `accepted`, or `rejected` with its code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IngestLabels {
    /// `accepted` or `rejected`.
    pub verdict: &'static str,
    /// The error code of a rejection (`BAD_REQUEST`, …); empty when accepted.
    pub code: &'static str,
}

/// One label `kind` (a closed set).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// The kind.
    pub kind: &'static str,
}

/// The labels of the deliveries gauge: `channel` (`webhook`, `email`, `slack`) and
/// `state` (`pending`, `delivered`, `failed_attempts`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabel {
    /// The channel.
    pub channel: &'static str,
    /// The state.
    pub state: &'static str,
}

/// `status` and `context` of the open requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpenLabels {
    /// `pending` or `claimed`.
    pub status: String,
    /// The context (or [`OTHER_CONTEXTS`]).
    pub context: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric dshq keeps.
pub struct Metrics {
    registry: Registry,
    http_requests: Family<HttpLabels, Counter>,
    connections: Gauge,
    streams: Family<KindLabel, Gauge>,
    ingest: Family<IngestLabels, Counter>,
    changes: Family<KindLabel, Counter>,
    time_to_answer: Histogram,
    store_write: Family<KindLabel, Histogram>,
    open: Family<OpenLabels, Gauge>,
    oldest_pending: FloatGauge,
    leases: Gauge,
    lease_expiry: FloatGauge,
    outcomes_pending: Gauge,
    deliveries: Family<DeliveryLabel, Gauge>,
}

static METRICS: OnceLock<Metrics> = OnceLock::new();

/// Turn the metrics on (once, at start, for `--metrics`).
pub fn enable() -> &'static Metrics {
    METRICS.get_or_init(Metrics::new)
}

/// The metrics, when they are on.
pub fn get() -> Option<&'static Metrics> {
    METRICS.get()
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("dshq");
        let m = Metrics {
            registry: Registry::default(),
            http_requests: Family::default(),
            connections: Gauge::default(),
            streams: Family::default(),
            ingest: Family::default(),
            changes: Family::default(),
            // 1 s to about 12 days.
            time_to_answer: Histogram::new(exponential_buckets(1.0, 2.0, 21)),
            store_write: Family::new_with_constructor(|| {
                // 0.1 ms to about 3 s.
                Histogram::new(exponential_buckets(0.0001, 2.0, 16))
            }),
            open: Family::default(),
            oldest_pending: FloatGauge::default(),
            leases: Gauge::default(),
            lease_expiry: FloatGauge::default(),
            outcomes_pending: Gauge::default(),
            deliveries: Family::default(),
        };
        registry.register(
            "http_requests",
            "HTTP requests served, by route template, method and status",
            m.http_requests.clone(),
        );
        registry.register(
            "http_connections_open",
            "HTTP connections open on the API listener",
            m.connections.clone(),
        );
        registry.register(
            "streams_open",
            "Event streams open (api: /api/v1/stream, page: the reviewer page's live stream)",
            m.streams.clone(),
        );
        registry.register(
            "ingest",
            "Inbox files judged by this daemon: accepted, or rejected with their code",
            m.ingest.clone(),
        );
        registry.register(
            "request_changes",
            "Request lifecycle changes seen (accepted, claimed, released, answered, cancelled, aborted, expired)",
            m.changes.clone(),
        );
        registry.register(
            "time_to_answer_seconds",
            "From a request's acceptance to its answer",
            m.time_to_answer.clone(),
        );
        registry.register(
            "store_write_seconds",
            "How long a store write takes (writer: inbox, the file loop's batch; web, an HTTP or MCP write)",
            m.store_write.clone(),
        );
        registry.register(
            "requests_open",
            "Open requests by status and context (read from the store at each scrape)",
            m.open.clone(),
        );
        registry.register(
            "oldest_pending_age_seconds",
            "How long the oldest pending request has waited (0 when none is pending)",
            m.oldest_pending.clone(),
        );
        registry.register(
            "leases_held",
            "Live provider leases (read from the store at each scrape)",
            m.leases.clone(),
        );
        registry.register(
            "lease_next_expiry_seconds",
            "Seconds until the soonest live lease expires unless heartbeated (0 when none)",
            m.lease_expiry.clone(),
        );
        registry.register(
            "outcome_files_pending",
            "Final requests whose outcome file is not written yet",
            m.outcomes_pending.clone(),
        );
        registry.register(
            "deliveries",
            "The deliveries outbox (read from the store at each scrape): rows pending and delivered, and failed attempts",
            m.deliveries.clone(),
        );
        Metrics { registry, ..m }
    }

    /// An HTTP request was answered.
    pub fn http(&self, route: &str, method: &str, status: u16) {
        self.http_requests
            .get_or_create(&HttpLabels {
                route: route.to_string(),
                method: method.to_string(),
                status,
            })
            .inc();
    }

    /// The open-connections gauge.
    pub fn connections(&self) -> &Gauge {
        &self.connections
    }

    /// The open-streams gauge of `kind`.
    pub fn streams(&self, kind: &'static str) -> Gauge {
        self.streams.get_or_create_owned(&KindLabel { kind })
    }

    /// An inbox file was judged.
    pub fn ingested(&self, code: Option<&'static str>) {
        let labels = match code {
            None => IngestLabels {
                verdict: "accepted",
                code: "",
            },
            Some(code) => IngestLabels {
                verdict: "rejected",
                code,
            },
        };
        self.ingest.get_or_create(&labels).inc();
    }

    /// A lifecycle change was seen; an answer after `waited`.
    pub fn changed(&self, kind: &'static str, waited: Option<Duration>) {
        self.changes.get_or_create(&KindLabel { kind }).inc();
        if let Some(w) = waited {
            self.time_to_answer.observe(w.as_secs_f64());
        }
    }

    /// A store write by `writer` took `took`.
    pub fn wrote(&self, writer: &'static str, took: Duration) {
        self.store_write
            .get_or_create(&KindLabel { kind: writer })
            .observe(took.as_secs_f64());
    }

    /// Set the gauges read from the store.
    pub fn set_gauges(&self, g: &Gauges) {
        self.open.clear();
        let mut per_context: std::collections::HashMap<&str, i64> = Default::default();
        for (_, context, n) in &g.open.by_status_context {
            *per_context.entry(context.as_str()).or_default() += n;
        }
        let mut contexts: Vec<(&str, i64)> = per_context.into_iter().collect();
        contexts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let named: std::collections::HashSet<&str> = contexts
            .iter()
            .take(MAX_CONTEXTS)
            .map(|(c, _)| *c)
            .collect();
        for (status, context, n) in &g.open.by_status_context {
            let context = if named.contains(context.as_str()) {
                context.clone()
            } else {
                OTHER_CONTEXTS.to_string()
            };
            self.open
                .get_or_create(&OpenLabels {
                    status: status.clone(),
                    context,
                })
                .inc_by(*n);
        }
        self.oldest_pending
            .set(g.oldest_pending.map_or(0.0, |d| d.as_secs_f64()));
        self.leases.set(g.leases_live);
        self.lease_expiry
            .set(g.next_lease_expiry.map_or(0.0, |d| d.as_secs_f64()));
        self.outcomes_pending.set(g.outcome_files_pending);
        // Every channel's series, zero where it has no rows, so none vanishes.
        for channel in crate::core::channel::Channel::ALL {
            let c = g.deliveries.iter().find(|c| c.channel == channel);
            for (state, n) in [
                ("pending", c.map_or(0, |c| c.pending)),
                ("delivered", c.map_or(0, |c| c.delivered)),
                ("failed_attempts", c.map_or(0, |c| c.failed_attempts)),
            ] {
                self.deliveries
                    .get_or_create(&DeliveryLabel {
                        channel: channel.as_str(),
                        state,
                    })
                    .set(n);
            }
        }
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

/// The content type of [`Metrics::encode`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Holds one unit of a gauge (an open connection, an open stream) for its life.
pub struct Held(Option<Gauge>);

impl Held {
    /// Count one on `gauge` until dropped (nothing when the metrics are off).
    pub fn new(gauge: Option<Gauge>) -> Held {
        if let Some(g) = &gauge {
            g.inc();
        }
        Held(gauge)
    }

    /// One open stream of `kind`.
    pub fn stream(kind: &'static str) -> Held {
        Held::new(get().map(|m| m.streams(kind)))
    }

    /// One open connection.
    pub fn connection() -> Held {
        Held::new(get().map(|m| m.connections().clone()))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.dec();
        }
    }
}
