//! The command line: one file per subcommand and one dispatching `match`.
//!
//! Every command works on the database directly (the daemon is not needed), in the same
//! immediate transactions the daemon uses, so it is safe alongside other processes.
//! Commands that finish a request write its outcome file themselves.

pub mod abort;
pub mod agent;
pub mod answer;
pub mod ask;
pub mod audit;
pub mod away;
pub mod cancel;
pub mod claim;
pub mod claude_code;
pub mod completions;
pub mod config;
pub mod daemon;
pub mod email;
pub mod events;
pub mod export;
pub mod filter;
pub mod healthcheck;
pub mod history;
pub mod interactive;
pub mod list;
pub mod mcp;
pub mod provider;
pub mod prune;
pub mod push;
pub mod receipt;
pub mod schema;
pub mod show;
pub mod stats;
pub mod store;
pub mod token;
pub mod validate;
pub mod wait;
pub mod watch;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::error::{Error, Result};
use crate::root::Root;

/// dshq: a durable queue of human questions for batch and offline agents.
#[derive(Debug, Parser)]
#[command(name = "dshq", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// State root (database, inbox, outbox). Default: $XDG_STATE_HOME/dshq.
    #[arg(long, global = true, env = "DSHQ_ROOT", value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Where the store lives: `sqlite` (the default: dshq.db in the root) or a PostgreSQL
    /// database shared by the roots of many hosts, postgres://USER@HOST/DATABASE. Prefer
    /// the environment variable to the flag (other users can read argv); a password not in
    /// the URL is taken from PGPASSWORD.
    #[arg(
        long,
        global = true,
        env = "DSHQ_STORE",
        value_name = "URL",
        hide_env_values = true
    )]
    pub store: Option<String>,
    /// The config file (TOML; see `dshq config default`). Default:
    /// $XDG_CONFIG_HOME/dshq/config.toml when it exists.
    #[arg(long, global = true, env = "DSHQ_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// How log lines on stderr are written: text, or json (one object per line).
    #[arg(
        long,
        global = true,
        env = "DSHQ_LOG_FORMAT",
        value_enum,
        value_name = "FORMAT",
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// Print exactly one JSON document on stdout (the result or {"error": ...}).
    #[arg(long, global = true)]
    pub json: bool,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub color: interactive::style::ColorChoice,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields`, `target`).
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the host in the foreground: ingest the inbox, write the outbox, expire leases.
    Daemon(Box<daemon::Args>),
    /// Submit a request from a file or stdin; prints its id.
    Ask(ask::Args),
    /// Wait for a request's outcome.
    Wait(wait::Args),
    /// List requests, newest first.
    List(list::Args),
    /// Show one request with its questions, state and outcome.
    Show(show::Args),
    /// The provider lease: register, heartbeat, release, status.
    #[command(subcommand)]
    Provider(provider::Command),
    /// Follow new requests as they are accepted (NDJSON when piped or with --json).
    Watch(watch::Args),
    /// Reserve a request for the live lease.
    Claim(claim::Args),
    /// Answer a request.
    Answer(answer::Args),
    /// Cancel a request as the human (ASK_CANCELLED).
    Cancel(cancel::Args),
    /// Abort a request as the asker (ASK_ABORTED).
    Abort(abort::Args),
    /// The agent registry: who may ask.
    #[command(subcommand)]
    Agent(agent::Command),
    /// The audit: requests with who asked, who answered, when, and what was decided.
    History(history::Args),
    /// The full event trail of one request.
    Events(events::Args),
    /// Counts, wait percentiles, approval rate, and what is still waiting.
    Stats(stats::Args),
    /// Check the event log's hash chain.
    #[command(subcommand)]
    Audit(audit::Command),
    /// Everything as NDJSON, for archiving elsewhere.
    Export(export::Args),
    /// Remove final requests finished before a date, after exporting them to a file.
    Prune(prune::Args),
    /// Signed decision receipts: print one (`receipt ID`), the public key (`receipt
    /// key`), or verify one offline (`receipt verify FILE --key PUB`).
    Receipt(receipt::Args),
    /// Check request files offline with the same code as ingestion.
    Validate(validate::Args),
    /// Print the JSON Schema of a request, answer or outcome document.
    Schema(schema::Args),
    /// Print a shell completion script.
    Completions(completions::Args),
    /// Print the man page.
    Man,
    /// Bearer tokens of the HTTP API (`daemon --listen`): create, list, revoke.
    #[command(subcommand)]
    Token(token::Command),
    /// Away until a time: a delegate answers for you meanwhile (set, cancel, list).
    Away(away::Args),
    /// The MCP server over stdio: MCP agents ask, MCP clients with a human answer.
    Mcp(mcp::Args),
    /// The store itself: back it up, or copy it into a shared PostgreSQL database.
    #[command(subcommand)]
    Store(store::Command),
    /// Headless Claude Code: a PreToolUse hook that asks AskUserQuestion and ExitPlanMode
    /// through dshq, and resuming deferred sessions.
    #[command(subcommand)]
    ClaudeCode(claude_code::Command),
    /// The config file: print the default, check a file, show the effective settings.
    #[command(subcommand)]
    Config(config::Command),
    /// Exit 0 when the daemon is ready (its /readyz answers 200), else 1.
    Healthcheck(healthcheck::Args),
}

/// What every command gets.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The state root.
    pub root: Root,
    /// `--json`.
    pub json: bool,
    /// `--color`.
    pub color: interactive::style::ColorChoice,
}

impl Ctx {
    /// How a table on stdout is laid out: on a terminal, its width (crossterm asks the
    /// terminal), times relative to now and the status in colour (per `--color` and
    /// `NO_COLOR`); piped, every column whole and times absolute, so a script reads what
    /// it always read.
    pub fn layout(&self) -> crate::output::Layout {
        use std::io::IsTerminal;
        let color = self.color.for_stdout().color;
        if !std::io::stdout().is_terminal() {
            return crate::output::Layout {
                color,
                ..Default::default()
            };
        }
        crate::output::Layout {
            width: crossterm::terminal::size()
                .ok()
                .map(|(w, _)| w)
                .filter(|w| *w > 0),
            now: Some(crate::clock::now_ms()),
            color,
        }
    }

    /// Open the store (creating the layout).
    pub fn store(&self) -> Result<crate::store::Store> {
        self.root.open_store()
    }

    /// Open the store for a read command, showing it as it is now
    /// ([`crate::store::Store::view_now`]): nothing is created, migrated or committed, so
    /// a read-only copy can be read and a read never changes the store; a root that does
    /// not exist is `NO_ROOT` ([`crate::root::Root::require_existing`]). The view may hold
    /// the write lock: drop the store before printing.
    pub fn read_store(&self) -> Result<crate::store::Store> {
        let mut store = self.open_read_migrating()?;
        store.view_now()?;
        Ok(store)
    }

    /// Open for reading; a store that needs a migration is migrated when it can be written
    /// (an upgraded dshq), and refused with the clear error otherwise.
    fn open_read_migrating(&self) -> Result<crate::store::Store> {
        if let Err(no_root) = self.root.require_existing() {
            // An untrusted root is refused as such (UNSAFE_ROOT) before it is found empty.
            return Err(match self.root.check_trusted() {
                Err(e @ Error::Question(_)) => e,
                _ => no_root,
            });
        }
        match self.root.open_store_read() {
            Err(e @ Error::NeedsMigration { .. }) => self.root.open_store().map_err(|_| e),
            other => other,
        }
    }

    /// Like [`Ctx::read_store`], but showing the store as stored (no view at now, no open
    /// transaction, no write lock), for the audit's reads (`history`, `events`, `stats`,
    /// `export`, `audit verify`, `watch`), whose output may be long and read slowly.
    pub fn stored_store(&self) -> Result<crate::store::Store> {
        self.open_read_migrating()
    }
}

/// The whole command line as clap sees it, before a config file: the derived
/// definition, with every daemon flag's `DSHQ_*` variable ([`crate::config::with_env`]).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    crate::config::with_env(Cli::command())
}

/// Parse the process arguments (exits on a usage error, as clap does), returning the
/// parsed command line and the `answer` subcommand's matches. A config file (`--config`,
/// or the default path when it exists) is checked and its settings become the
/// arguments' defaults, under the variables and flags; the `config` commands read their
/// file themselves, so a broken file can still be checked.
pub fn parse() -> (Cli, Option<clap::ArgMatches>) {
    use clap::FromArgMatches;
    let base = command();
    let mut matches = match base.clone().try_get_matches() {
        Ok(m) => m,
        Err(e) => usage_exit(e),
    };
    if matches.subcommand_name() != Some("config") {
        let explicit = matches.get_one::<PathBuf>("config").cloned();
        if let Some(path) = crate::config::locate(explicit.as_deref()) {
            let applied = crate::config::load(&path)
                .and_then(|file| crate::config::check(&base, &file).map(|()| file));
            match applied {
                Ok(file) => {
                    matches = match crate::config::apply(base, &file).try_get_matches() {
                        Ok(m) => m,
                        Err(e) => usage_exit(e),
                    }
                }
                Err(e) => error_exit(&e),
            }
        }
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => usage_exit(e),
    };
    let answer_matches = matches.subcommand_matches("answer").cloned();
    (cli, answer_matches)
}

/// Exit on an error found before a command runs (a bad config file): as `main` reports
/// any other error, one JSON document with `--json`.
fn error_exit(e: &Error) -> ! {
    let ue = e.to_user_error();
    if std::env::args_os().any(|a| a == "--json") {
        crate::output::print_json(&crate::views::ErrorDoc { error: &ue });
    } else {
        eprintln!(
            "error: {}: {}",
            ue.code,
            crate::text::multi_line(&ue.message)
        );
    }
    std::process::exit(ue.code.exit_status());
}

/// Exit on a command-line parse error: with `--json` anywhere in the arguments, as the
/// one JSON error document stdout promises (code `USAGE`, exit 2); otherwise as clap
/// prints it. Help and version requests print normally.
fn usage_exit(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    let informational = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if !informational && claude_code::is_hook_invocation(std::env::args_os()) {
        claude_code::usage_exit(&e);
    }
    if !informational && std::env::args_os().any(|a| a == "--json") {
        let message = e.render().to_string();
        let message = message
            .trim()
            .strip_prefix("error: ")
            .unwrap_or(message.trim());
        let ue = crate::protocol::UserQuestionError::new(crate::protocol::Code::Usage, message);
        crate::output::print_json(&crate::views::ErrorDoc { error: &ue });
        std::process::exit(crate::protocol::Code::Usage.exit_status());
    }
    e.exit()
}

impl Command {
    /// Whether this command only reads and prints, so that a reader that goes away (`dshq
    /// list | head`) should end it the Unix way, by SIGPIPE, rather than with a panic on
    /// the failed write. Commands that serve (the daemon, MCP), hold a lease (answer,
    /// claim, provider) or write the store keep SIGPIPE ignored, as Rust sets it, and see
    /// a closed pipe as an error they handle.
    pub fn prints_to_a_reader(&self) -> bool {
        matches!(
            self,
            Command::List(_)
                | Command::Show(_)
                | Command::Watch(_)
                | Command::History(_)
                | Command::Events(_)
                | Command::Stats(_)
                | Command::Audit(_)
                | Command::Export(_)
                | Command::Receipt(_)
                | Command::Validate(_)
                | Command::Schema(_)
                | Command::Completions(_)
                | Command::Man
        )
    }
}

impl Cli {
    /// Whether a reader that goes away may end this run by SIGPIPE: a command that only
    /// reads and prints ([`Command::prints_to_a_reader`]) on the SQLite store. A
    /// PostgreSQL store talks to its server over a socket that a signal's default action
    /// would also cover (a server that hung up must be a `STORE` error, not a silent death),
    /// so there SIGPIPE stays ignored.
    pub fn sigpipe_may_end_it(&self) -> bool {
        self.command.prints_to_a_reader()
            && matches!(
                crate::root::Backend::parse(self.store.as_deref()),
                Ok(crate::root::Backend::Sqlite)
            )
    }
}

/// Run the parsed command line (`answer_matches`: the `answer` subcommand's matches, which
/// carry the order of its flags).
pub fn run(cli: Cli, answer_matches: Option<&clap::ArgMatches>) -> Result<()> {
    // The daemon handles SIGTERM and SIGINT before it touches its root: a
    // service manager may stop it at any moment of its start.
    let stop = match &cli.command {
        Command::Daemon(a) => Some(crate::shutdown::Stop::install(a.shutdown_grace)?),
        _ => None,
    };
    let offline = matches!(
        cli.command,
        Command::Validate(_)
            | Command::Schema(_)
            | Command::Completions(_)
            | Command::Man
            | Command::Config(_)
    ) || matches!(&cli.command, Command::Receipt(a) if a.is_offline());
    let backend = crate::root::Backend::parse(cli.store.as_deref())?;
    let root = match Root::resolve(cli.root) {
        Ok(r) => r.with_backend(backend),
        // Offline commands never touch the root.
        Err(_) if offline => Root::new("."),
        Err(e) => return Err(e),
    };
    // The config file's quorum policy holds every ask this process makes.
    let root = match crate::config::locate(cli.config.as_deref()) {
        Some(path) if !offline => root.with_quorum_policy(crate::config::load(&path)?.quorum),
        _ => root,
    };
    let ctx = Ctx {
        root,
        json: cli.json,
        color: cli.color,
    };
    let cli_config = cli.config.clone();
    match cli.command {
        Command::Daemon(a) => daemon::run(
            &ctx,
            *a,
            stop.expect("installed for the daemon"),
            cli_config.as_deref(),
        ),
        Command::Store(c) => store::run(&ctx, c),
        Command::Ask(a) => ask::run(&ctx, a),
        Command::Wait(a) => wait::run(&ctx, a),
        Command::List(a) => list::run(&ctx, a),
        Command::Show(a) => show::run(&ctx, a),
        Command::Provider(c) => provider::run(&ctx, c),
        Command::Watch(a) => watch::run(&ctx, a),
        Command::Claim(a) => claim::run(&ctx, a),
        Command::Answer(a) => answer::run_with_matches(&ctx, a, answer_matches),
        Command::Cancel(a) => cancel::run(&ctx, a),
        Command::Abort(a) => abort::run(&ctx, a),
        Command::Agent(c) => agent::run(&ctx, c),
        Command::History(a) => history::run(&ctx, a),
        Command::Events(a) => events::run(&ctx, a),
        Command::Stats(a) => stats::run(&ctx, a),
        Command::Audit(c) => audit::run(&ctx, c),
        Command::Export(a) => export::run(&ctx, a),
        Command::Prune(a) => prune::run(&ctx, a),
        Command::Receipt(a) => receipt::run(&ctx, a),
        Command::Validate(a) => validate::run(&ctx, a),
        Command::Schema(a) => schema::run(&ctx, a),
        Command::Completions(a) => completions::run(&ctx, a),
        Command::Man => completions::man(&ctx),
        Command::Token(c) => token::run(&ctx, c),
        Command::Away(a) => away::run(&ctx, a),
        Command::Mcp(a) => mcp::run(&ctx, a),
        Command::ClaudeCode(c) => claude_code::run(&ctx, c),
        Command::Config(c) => config::run(&ctx, c, cli_config),
        Command::Healthcheck(a) => healthcheck::run(&ctx, a, cli_config),
    }
}

/// Parse a humantime duration flag (`30s`, `5m`, `1h 30m`).
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("{s:?} is not a duration such as 30s or 5m: {e}"))
}

/// The intent kinds a `--intent` filter accepts (a closed set, like `--status`).
pub const INTENTS: &[&str] = &[crate::protocol::types::PLAN_REVIEW];

/// A clap value parser for a closed set defined by a pure type (a status, a code, a
/// decision): clap lists the wire names in `--help` and rejects anything else as a usage
/// error, and the command receives the typed variant. The pure types stay free of clap.
pub fn closed_set<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(all.iter().map(|&v| name(v))).map(move |s| {
        *all.iter()
            .find(|&&v| name(v) == s)
            .expect("clap admits only the listed names")
    })
}

/// The documented bounds of every duration flag (README, "Durations"). A value outside
/// them is a usage error: an unbounded ttl blocks a context for centuries or overflows the
/// clock, a zero tick spins the daemon.
pub mod bounds {
    use std::time::Duration;

    /// `provider register --ttl`, `answer --ttl`: a provider lease.
    pub const LEASE_TTL: (Duration, Duration) =
        (Duration::from_secs(1), Duration::from_secs(24 * 3600));
    /// `agent enter --ttl`.
    pub const AGENT_TTL: (Duration, Duration) =
        (Duration::from_secs(1), Duration::from_secs(30 * 86400));
    /// `daemon --tick`.
    pub const TICK: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(3600));
    /// `daemon --shutdown-grace`.
    pub const SHUTDOWN_GRACE: (Duration, Duration) =
        (Duration::from_millis(100), Duration::from_secs(3600));
    /// `daemon --hook-timeout`.
    pub const HOOK_TIMEOUT: (Duration, Duration) =
        (Duration::from_millis(100), Duration::from_secs(24 * 3600));
    /// `wait --timeout`, `ask --timeout`.
    pub const WAIT_TIMEOUT: (Duration, Duration) =
        (Duration::ZERO, Duration::from_secs(366 * 86400));
    /// `answer --idle-release`: how long an idle screen keeps its lease.
    pub const IDLE_RELEASE: (Duration, Duration) =
        (Duration::from_secs(1), Duration::from_secs(24 * 3600));
}

fn parse_bounded(
    s: &str,
    (min, max): (Duration, Duration),
) -> std::result::Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < min || d > max {
        let show = |d: Duration| humantime::format_duration(d).to_string();
        return Err(format!(
            "{s:?} is out of range: give between {} and {}",
            show(min),
            show(max)
        ));
    }
    Ok(d)
}

/// A provider lease's ttl ([`bounds::LEASE_TTL`]).
pub fn parse_lease_ttl(s: &str) -> std::result::Result<Duration, String> {
    parse_bounded(s, bounds::LEASE_TTL)
}
/// An agent's ttl ([`bounds::AGENT_TTL`]).
pub fn parse_agent_ttl(s: &str) -> std::result::Result<Duration, String> {
    parse_bounded(s, bounds::AGENT_TTL)
}
/// The daemon's tick ([`bounds::TICK`]).
pub fn parse_tick(s: &str) -> std::result::Result<Duration, String> {
    parse_bounded(s, bounds::TICK)
}
/// The daemon's drain ([`bounds::SHUTDOWN_GRACE`]).
pub fn parse_shutdown_grace(s: &str) -> std::result::Result<Duration, String> {
    parse_bounded(s, bounds::SHUTDOWN_GRACE)
}
/// A hook's timeout ([`bounds::HOOK_TIMEOUT`]).
pub fn parse_hook_timeout(s: &str) -> std::result::Result<Duration, String> {
    parse_bounded(s, bounds::HOOK_TIMEOUT)
}
/// A wait's timeout ([`bounds::WAIT_TIMEOUT`]).
pub fn parse_wait_timeout(s: &str) -> std::result::Result<Duration, String> {
    parse_bounded(s, bounds::WAIT_TIMEOUT)
}

/// An idle screen's hold on its lease ([`bounds::IDLE_RELEASE`]).
pub fn parse_idle_release(s: &str) -> std::result::Result<Duration, String> {
    parse_bounded(s, bounds::IDLE_RELEASE)
}

/// The lease token from `--lease` / `DSHQ_LEASE`, or a usage error naming both.
pub fn require_lease(lease: Option<String>) -> Result<String> {
    lease.filter(|l| !l.trim().is_empty()).ok_or_else(|| {
        Error::Usage(
            "no lease: pass --lease TOKEN or set DSHQ_LEASE (from `dshq provider register`)".into(),
        )
    })
}

/// The default provider name for transient leases: `$USER`, else `cli`.
pub fn default_provider_name() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "cli".into())
}

pub use crate::app::provide::TRANSIENT_TTL;

/// The page's URL a channel's messages link to (`channel`, such as `--email`, given
/// `flag`, its page URL flag): the URL given, else `http://ADDR` of `--listen` when that
/// is an address a reviewer's browser can open. One rule for every channel that links to
/// the page:
///
/// - neither: the daemon does not start (another daemon on this store may serve the page:
///   name its URL);
/// - `--listen` on an unspecified address (`0.0.0.0`, `[::]`) or port 0: no URL anyone
///   can open follows from it, so the flag must be given.
pub fn page_url(
    given: Option<&str>,
    listen: Option<std::net::SocketAddr>,
    channel: &str,
    flag: &str,
) -> Result<String> {
    match (given, listen) {
        (Some(u), _) => Ok(u.trim_end_matches('/').to_string()),
        (None, Some(l)) if l.ip().is_unspecified() || l.port() == 0 => Err(Error::Usage(format!(
            "{channel} links to the page, and --listen {l} names no address a browser can open \
             (an unspecified address or port 0): give {flag} URL, the page's URL as reviewers \
             reach it"
        ))),
        (None, Some(l)) => Ok(format!("http://{l}")),
        (None, None) => Err(Error::Usage(format!(
            "{channel} needs --listen (this daemon serves the page its messages link to) or \
             {flag} URL (another daemon on this store serves it there)"
        ))),
    }
}
