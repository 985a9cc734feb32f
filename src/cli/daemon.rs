//! `dshq daemon`: run the host in the foreground.

use std::sync::Arc;
use std::time::Duration;

use super::{parse_hook_timeout, parse_tick, Ctx};
use crate::daemon::{self, Config};
use crate::error::Result;
use crate::hooks::HookConfig;
use crate::shutdown::Stop;

/// Arguments of `dshq daemon`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Longest sleep between full rescans of the directories (10ms to 1h).
    #[arg(long, default_value = "1s", value_parser = parse_tick)]
    pub tick: Duration,
    /// Inbox files per transaction.
    #[arg(long, default_value_t = 512)]
    pub batch: usize,
    /// About how many bytes of input one transaction reads (a batch ends after the file
    /// that reaches it), so large files cannot take the daemon's memory.
    #[arg(long, default_value_t = daemon::DEFAULT_BATCH_BYTES)]
    pub batch_bytes: u64,
    /// Size limit of inbox and answer files, in bytes.
    #[arg(long, default_value_t = crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES)]
    pub max_bytes: u64,
    /// Run CMD (with `sh -c`) for each newly accepted request: the request JSON on its
    /// stdin, DSHQ_REQUEST_ID and DSHQ_CONTEXT in its environment. Never blocks ingestion.
    #[arg(long, value_name = "CMD")]
    pub on_question: Option<String>,
    /// Kill an --on-question hook (and its process group) that runs longer than this
    /// (100ms to 24h).
    #[arg(long, default_value = "30s", value_parser = parse_hook_timeout)]
    pub hook_timeout: Duration,
    /// Also serve the HTTP API (and the reviewer's page) on ADDR: `HOST:PORT`, or a bare
    /// PORT for loopback (e.g. 7465 = 127.0.0.1:7465; port 0 picks a free one). The
    /// bound address is logged as "listening on http://ADDR". Put a TLS reverse proxy in
    /// front of it before binding anything but loopback.
    #[arg(long, value_name = "ADDR", value_parser = crate::host::parse_listen)]
    pub listen: Option<std::net::SocketAddr>,
    /// With --listen: release the provider lease the host holds for a context after this
    /// long without a reviewer acting in it (1s to 24h).
    #[arg(long, default_value = "5m", value_parser = super::parse_lease_ttl, requires = "listen")]
    pub web_idle: Duration,
    /// With --listen: close a connection that has not sent a whole request head this long
    /// after it was accepted or its last response was sent (the header-read and idle
    /// keep-alive timeout; a long-poll or event stream in progress is not cut).
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = super::parse_lease_ttl, requires = "listen")]
    pub http_header_timeout: Duration,
    /// With --listen: the most HTTP connections open at once (lowered at start to leave
    /// descriptors for the file loop and the store under the open-file limit); more are
    /// answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..), requires = "listen")]
    pub http_max_conns: u32,
    /// With --listen: the most HTTP connections open at once from one peer address.
    #[arg(long, value_name = "N", default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..), requires = "listen")]
    pub http_max_conns_per_peer: u32,
    /// With --listen: a page login unused this long ends, with its live streams (1s to
    /// 30d).
    #[arg(long, value_name = "DUR", default_value = "12h", value_parser = parse_session_idle, requires = "listen")]
    pub web_session_idle: Duration,
    /// With --listen: a page login ends this long after it began, however busy (1s to
    /// 30d): a token's, or a sign-in through the identity provider (whose groups were
    /// judged when it began).
    #[arg(long, value_name = "DUR", default_value = "24h", value_parser = parse_session_idle, requires = "listen")]
    pub web_session_max: Duration,
    /// With --listen: a browser origin `/mcp` accepts (`SCHEME://HOST:PORT`, `:*` for any
    /// port, or `null`); repeat for several. A request with any other `Origin` header is
    /// refused with 403, but a loopback listener's own origin (`http://localhost:PORT`
    /// calling `localhost:PORT`); requests without one (MCP clients that are not
    /// browsers) are not affected. Default: none.
    #[arg(long = "mcp-allow-origin", value_name = "ORIGIN", requires = "listen", value_parser = crate::mcp::http::parse_origin)]
    pub mcp_allow_origin: Vec<String>,
    /// With --listen: an origin the A2A face may send push notifications to
    /// (`http://HOST:PORT`, `http://HOST:*` for any port); repeat for several. A client's
    /// webhook anywhere else is refused. Default: none, and the agent card says it sends
    /// no push notifications.
    #[arg(long = "a2a-push-allow", value_name = "ORIGIN", requires = "listen", value_parser = crate::a2a::push::parse_origin)]
    pub a2a_push_allow: Vec<crate::a2a::push::Origin>,
    /// Prune on a schedule: remove final requests finished more than DUR ago (e.g. 90d),
    /// each time after exporting them to a new prune-TIME.ndjson in --prune-export-dir.
    #[arg(long, value_name = "DUR", value_parser = super::parse_duration, requires = "prune_export_dir")]
    pub prune_after: Option<Duration>,
    /// With --prune-after: the directory the export files go to.
    #[arg(long, value_name = "DIR", requires = "prune_after")]
    pub prune_export_dir: Option<std::path::PathBuf>,
    /// With --prune-after: how often to prune (the first time at start).
    #[arg(long, value_name = "DUR", default_value = "1h", value_parser = super::parse_duration)]
    pub prune_every: Duration,
    /// With --listen: serve Prometheus metrics at http://ADDR/metrics (and /healthz,
    /// /readyz), on a listener of their own: `HOST:PORT`, or a bare PORT for loopback.
    #[arg(long, value_name = "ADDR", value_parser = crate::host::parse_listen)]
    pub metrics: Option<std::net::SocketAddr>,
    /// Send the deliveries of CONTEXT's requests (accepted, claimed, reminded, escalated,
    /// answered, expired, cancelled, aborted) to URL as webhooks signed as Standard Webhooks
    /// describes, with the secret in the root's webhook.key (created 0600 at the first
    /// start) or the context's --webhook-secret-file; one CONTEXT=URL each, repeat for
    /// several contexts.
    #[arg(long, value_name = "CONTEXT=URL", value_parser = crate::channels::webhook::parse_webhook)]
    pub webhook: Vec<(String, hyper::Uri)>,
    /// With --webhook: sign CONTEXT's deliveries with the secret in FILE (whsec_ and
    /// base64, mode 0600, written by you) instead of the root's webhook.key, so a receiver
    /// that is another party verifies with a key of its own; one CONTEXT=FILE each, repeat
    /// for several.
    #[arg(long, value_name = "CONTEXT=FILE", value_parser = crate::channels::webhook::parse_secret_file)]
    pub webhook_secret_file: Vec<(String, std::path::PathBuf)>,
    /// With a channel (--webhook, ...): the wait after a delivery's first failed attempt
    /// (doubling after each, at most 10m). Its earlier name, --webhook-retry-min, is kept.
    #[arg(long, visible_alias = "webhook-retry-min", value_name = "DUR", default_value = "1s", value_parser = super::parse_duration)]
    pub delivery_retry_min: Duration,
    /// Post the requests of CONTEXT to the Slack channel CHANNEL (its id, such as
    /// C0123ABCD) as Block Kit messages with buttons, updated when they end; one
    /// CONTEXT=CHANNEL each, repeat for several contexts. Needs --listen (the interactions
    /// endpoint, POST /slack/interactions, and the page) or --slack-page-url naming a
    /// daemon on this store that serves them, the bot token in the root's slack.token and
    /// the signing secret in the root's slack-signing-secret (both mode 0600), and the
    /// config file's [slack.users] mapping Slack users to reviewers.
    #[arg(long, value_name = "CONTEXT=CHANNEL", value_parser = crate::channels::slack::parse_slack)]
    pub slack: Vec<(String, String)>,
    /// With --slack: the file holding the bot token (xoxb-…; mode 0600), instead of the
    /// root's slack.token.
    #[arg(long, value_name = "FILE")]
    pub slack_token_file: Option<std::path::PathBuf>,
    /// With --slack: the file holding the app's signing secret (mode 0600), instead of
    /// the root's slack-signing-secret.
    #[arg(long, value_name = "FILE")]
    pub slack_signing_secret_file: Option<std::path::PathBuf>,
    /// With --slack: Slack's Web API base URL (https://, or http:// to a loopback address).
    #[arg(long, value_name = "URL", default_value = crate::channels::slack::DEFAULT_API, value_parser = crate::channels::slack::parse_api_url)]
    pub slack_api_url: String,
    /// With --slack: the page's URL as reviewers reach it (behind your TLS proxy), for the
    /// links in the messages; default http://ADDR of --listen, which must then name an
    /// address and port a browser can open (not 0.0.0.0, [::] or port 0).
    #[arg(long, value_name = "URL", value_parser = crate::channels::slack::parse_page_url)]
    pub slack_page_url: Option<String>,
    /// With --slack: how long one delivery's Web API calls may take in all (connecting,
    /// every read and write, each answer), and one call an interaction makes.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = super::parse_duration)]
    pub slack_timeout: Duration,
    /// With --webhook: how long one attempt may take in all (connecting, writing the POST,
    /// reading the answer).
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = super::parse_duration)]
    pub webhook_timeout: Duration,
    /// The email channel: --email, --smtp, --email-from, ...
    #[command(flatten)]
    pub email: Box<super::email::EmailArgs>,
    /// The Web Push channel: --push, --push-contact, ...
    #[command(flatten)]
    pub push: Box<super::push::PushArgs>,
    /// The operator's deadline ladder of a context: CONTEXT:FIELD=VALUE, FIELD one of
    /// remindAfter, escalateAfter, escalateTo, expireAfter (e.g. ops:remindAfter=1h);
    /// repeat (or separate with commas). A request's own `ladder` wins field by field;
    /// a policy never chooses an answer. Replaces the store's policies at start.
    #[arg(long, value_name = "CONTEXT:FIELD=VALUE", value_delimiter = ',')]
    pub context_ladder: Vec<String>,
    /// On SIGTERM or SIGINT, drain for at most this long (100ms to 1h), then stop at once;
    /// a second signal stops at once too. Nothing committed is lost either way.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = super::parse_shutdown_grace)]
    pub shutdown_grace: Duration,
}

/// The Slack channel of `--slack` and its flags, with the config file's `[slack.users]`.
fn slack_of(
    channels: &[(String, String)],
    a: &Args,
    config_file: Option<&std::path::Path>,
) -> Result<Option<crate::channels::slack::Slack>> {
    if channels.is_empty() {
        return Ok(None);
    }
    let users = match crate::config::locate(config_file) {
        Some(path) => crate::config::load(&path)?.slack_users,
        None => Default::default(),
    };
    if users.is_empty() {
        tracing::warn!("--slack: the config file maps no Slack user to a reviewer ([slack.users]): every press will be refused");
    }
    let page_url = super::page_url(
        a.slack_page_url.as_deref(),
        a.listen,
        "--slack",
        "--slack-page-url",
    )?;
    Ok(Some(crate::channels::slack::Slack {
        channels: crate::channels::target::one_per_context("slack", channels.to_vec())
            .map_err(crate::Error::Usage)?,
        api: a.slack_api_url.clone(),
        token_file: a.slack_token_file.clone(),
        signing_secret_file: a.slack_signing_secret_file.clone(),
        page_url,
        users,
        timeout: a.slack_timeout.max(Duration::from_millis(100)),
    }))
}

/// The webhook channel of `--webhook` and `--webhook-secret-file`: one receiver per
/// context, and a secret file only for a context that has one.
fn webhooks_of(
    urls: Vec<(String, hyper::Uri)>,
    secret_files: Vec<(String, std::path::PathBuf)>,
    timeout: Duration,
) -> Result<Option<crate::channels::webhook::Webhooks>> {
    use crate::channels::target::one_per_context;
    let urls = one_per_context("webhook", urls).map_err(crate::Error::Usage)?;
    let secret_files =
        one_per_context("webhook-secret-file", secret_files).map_err(crate::Error::Usage)?;
    if let Some(c) = secret_files.keys().find(|c| !urls.contains_key(*c)) {
        return Err(crate::Error::Usage(format!(
            "--webhook-secret-file {c}=…: no --webhook for context {c:?}"
        )));
    }
    Ok(
        (!urls.is_empty()).then(|| crate::channels::webhook::Webhooks {
            urls,
            secret_files,
            timeout: timeout.max(Duration::from_millis(100)),
        }),
    )
}

/// The Telegram channel of the config file's `[telegram]`, with the page's URL (its
/// `page-url`, else `--listen`'s: the one page-URL rule, [`super::page_url`]).
fn telegram_of(
    a: &Args,
    config_file: Option<&std::path::Path>,
) -> Result<Option<crate::channels::telegram::Telegram>> {
    let Some(settings) = crate::config::locate(config_file)
        .map(|path| crate::config::load(&path))
        .transpose()?
        .and_then(|f| f.telegram)
    else {
        return Ok(None);
    };
    let page_url = super::page_url(
        settings.page_url.as_deref(),
        a.listen,
        "the config file's [telegram]",
        "its page-url",
    )?;
    Ok(Some(crate::channels::telegram::Telegram {
        settings,
        page_url,
    }))
}

/// The identity provider of the config file's `[oidc]`, with its client secret read (a
/// secret file others may read stops the start).
fn oidc_of(
    a: &Args,
    config_file: Option<&std::path::Path>,
) -> Result<Option<std::sync::Arc<crate::host::oidc::Oidc>>> {
    let Some(settings) = crate::config::locate(config_file)
        .map(|path| crate::config::load(&path))
        .transpose()?
        .and_then(|f| f.oidc)
    else {
        return Ok(None);
    };
    if a.listen.is_none() {
        tracing::warn!("the config file's [oidc] signs people in to the page: it needs --listen");
        return Ok(None);
    }
    Ok(Some(std::sync::Arc::new(crate::host::oidc::Oidc::new(
        settings,
    )?)))
}

/// `--web-session-idle`, `--web-session-max`: 1s to 30 days.
fn parse_session_idle(s: &str) -> std::result::Result<Duration, String> {
    let d = super::parse_duration(s)?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(30 * 86_400) {
        return Err(format!("{s:?}: give 1s to 30d, such as 12h"));
    }
    Ok(d)
}

/// The key and secret files a root holds, with what each holds: checked at the daemon's
/// start ([`crate::disk::secret`]'s rule), so that a daemon with one that others may read
/// does not start, whether or not this run uses it.
const ROOT_SECRETS: &[(&str, &str)] = &[
    (crate::store::chain::KEY_FILE, crate::store::chain::KEY_WHAT),
    (crate::receipt::key::KEY_FILE, crate::receipt::key::KEY_WHAT),
    (
        crate::app::mail_key::KEY_FILE,
        crate::app::mail_key::KEY_WHAT,
    ),
    (
        crate::channels::webhook::KEY_FILE,
        crate::channels::webhook::KEY_WHAT,
    ),
    (crate::mcp::state::KEY_FILE, crate::mcp::state::KEY_WHAT),
    (
        crate::channels::slack::TOKEN_FILE,
        crate::channels::slack::TOKEN_WHAT,
    ),
    (
        crate::channels::slack::SIGNING_SECRET_FILE,
        crate::channels::slack::SIGNING_SECRET_WHAT,
    ),
    (
        crate::channels::telegram::TOKEN_FILE,
        crate::channels::telegram::TOKEN_WHAT,
    ),
    (
        crate::channels::telegram::SECRET_TOKEN_FILE,
        crate::channels::telegram::SECRET_TOKEN_WHAT,
    ),
];

/// Run it, stopping on `stop` (installed before anything else: see [`crate::shutdown`]).
pub fn run(
    ctx: &Ctx,
    a: Args,
    stop: Arc<Stop>,
    config_file: Option<&std::path::Path>,
) -> Result<()> {
    for (file, what) in ROOT_SECRETS {
        crate::disk::secret::check(&ctx.root.dir().join(file), what)?;
    }
    if a.metrics.is_some() {
        if a.listen.is_none() {
            return Err(crate::Error::Usage(
                "--metrics needs --listen: the metrics and probes are served by the host".into(),
            ));
        }
        // Before the loop starts, so the start's own ingest is counted.
        crate::metrics::enable();
    }
    let context_ladders = if a.context_ladder.is_empty() {
        None
    } else {
        let mut policies = std::collections::BTreeMap::new();
        for item in &a.context_ladder {
            crate::protocol::ladder::parse_policy_item(item, &mut policies)
                .map_err(|e| crate::Error::Usage(format!("--context-ladder {e}")))?;
        }
        let mut out = Vec::new();
        for (context, l) in policies {
            crate::protocol::ladder::resolve(&l, &[], &context, None, jiff::Timestamp::now())
                .map_err(|e| {
                    crate::Error::Usage(format!("--context-ladder of {context:?}: {}", e.message))
                })?;
            let json = serde_json::to_string(&l).map_err(|e| {
                crate::Error::Invalid(format!("the policy does not serialize: {e}"))
            })?;
            out.push((context, json));
        }
        Some(out)
    };
    let slack = slack_of(&a.slack, &a, config_file)?;
    let telegram = telegram_of(&a, config_file)?;
    let oidc = oidc_of(&a, config_file)?;
    let teams = match crate::config::locate(config_file)
        .map(|path| crate::config::load(&path))
        .transpose()?
        .and_then(|f| f.teams)
    {
        Some(settings) => {
            let page = super::page_url(
                settings.page_url.as_deref(),
                a.listen,
                "[teams]",
                "the [teams] page-url",
            )?;
            Some(crate::channels::teams::configured(
                settings,
                page,
                a.listen.is_some(),
            ))
        }
        None => None,
    };
    let config = Config {
        tick: a.tick,
        batch: a.batch,
        batch_bytes: a.batch_bytes.max(1),
        max_bytes: a.max_bytes,
        on_question: a
            .on_question
            .filter(|c| !c.trim().is_empty())
            .map(|c| HookConfig::new(c, a.hook_timeout)),
        prune: match (a.prune_after, a.prune_export_dir) {
            (Some(after), Some(dir)) => Some(daemon::PruneSchedule {
                after,
                dir,
                every: a.prune_every.max(Duration::from_secs(1)),
            }),
            _ => None,
        },
        context_ladders,
    };
    let channels = {
        let channels = crate::channels::Channels {
            webhooks: webhooks_of(a.webhook, a.webhook_secret_file, a.webhook_timeout)?,
            slack,
            email: (*a.email).channel(a.listen)?,
            push: a.push.channel(),
            teams,
            telegram,
            retry_min: a.delivery_retry_min.max(Duration::from_millis(10)),
        };
        (!channels.is_empty()).then_some(channels)
    };
    let web = a.listen.map(|listen| crate::serve::WebConfig {
        listen,
        lease_ttl: Duration::from_secs(60).min(a.web_idle.max(Duration::from_secs(3))),
        idle: a.web_idle,
        limits: crate::host::Limits {
            max_body: a.max_bytes,
            session_idle: a.web_session_idle,
            session_max: a.web_session_max,
            ..Default::default()
        },
        conns: crate::host::listen::ConnLimits {
            header_read: a.http_header_timeout,
            max_conns: a.http_max_conns as usize,
            max_per_peer: a.http_max_conns_per_peer as usize,
            ..Default::default()
        },
        mcp: crate::mcp::http::HttpConfig {
            allowed_origins: a.mcp_allow_origin,
            loopback: listen.ip().is_loopback(),
        },
        a2a: crate::a2a::Config {
            push_allow: a.a2a_push_allow,
        },
        metrics: a.metrics,
        oidc,
    });
    crate::serve::daemon(&ctx.root, &config, channels, web, stop)
}
