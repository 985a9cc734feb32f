//! The crate's error type: one variant per real failure, each mapped to a stable code
//! ([`Code`]) and through it to a documented exit status.

use std::path::PathBuf;

use crate::protocol::{Code, UserQuestionError};

/// Everything that can go wrong in dshq.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A protocol error with its own code (the ask checks, the answer rules, cancel/abort).
    #[error(transparent)]
    Question(#[from] UserQuestionError),
    /// No request with that id.
    #[error("no request with id {0:?}")]
    NotFound(String),
    /// No web token with that name (`dshq token revoke`).
    #[error("no web token named {0:?}; see `dshq token list`")]
    TokenNotFound(String),
    /// No token, or a wrong or revoked one, on an HTTP call. Says nothing more on purpose.
    #[error("a valid bearer token is required")]
    Unauthorized,
    /// The token's role (or context) may not take this action. Says nothing more.
    #[error("this token's role may not do that")]
    Forbidden,
    /// No live agent instance with that id.
    #[error("no live agent {id:?} with instance {instance:?}")]
    AgentNotFound {
        /// The agent id.
        id: String,
        /// The instance given.
        instance: String,
    },
    /// The owner named by `agent enter --owner` is not live.
    #[error("owner {0:?} is not a live agent: an owner must be live to own a new agent")]
    OwnerNotLive(String),
    /// The request is already final; final states never change.
    #[error("request {id:?} is already {status}; final states never change")]
    RequestFinal {
        /// The request id.
        id: String,
        /// Its final status.
        status: String,
    },
    /// A reviewer voted on a request with a quorum that they asked themselves:
    /// the asker's own identity never counts.
    #[error("{voter:?} is the person who asked request {id:?}: the asker's own vote never counts toward its quorum, from any face")]
    OwnRequest {
        /// The request id.
        id: String,
        /// The voter.
        voter: String,
    },
    /// A reviewer outside the quorum's group voted.
    #[error("request {id:?} takes votes only from group {group:?}, and {voter:?} is not a member")]
    NotInGroup {
        /// The request id.
        id: String,
        /// The group.
        group: String,
        /// The voter.
        voter: String,
    },
    /// A person voted again on a request with a quorum, for another answer or through
    /// another face: the first vote stands (the same identity giving the same answer again
    /// is accepted and counted once).
    #[error("{voter} already voted on request {id:?}: a person votes once, from any face, and a vote cannot change")]
    AlreadyVoted {
        /// The request id.
        id: String,
        /// The voter.
        voter: String,
    },
    /// An away notice whose end is not in the future.
    #[error("the away notice ends at {0}, which is not in the future")]
    AwayInPast(String),
    /// An away notice naming the person as their own delegate.
    #[error("{0:?} cannot be their own delegate: name another reviewer")]
    AwaySelf(String),
    /// An away notice that would chain delegations.
    #[error("delegations do not chain: {0}")]
    AwayChain(String),
    /// A delegate no reviewer is known as.
    #[error(
        "{0:?} is no reviewer the people directory or the web tokens know: a delegate must be one"
    )]
    UnknownDelegate(String),
    /// No away notice to cancel.
    #[error("{0:?} has no away notice to cancel")]
    NotAway(String),
    /// An answer for a person whose delegate the answerer is not now.
    #[error("{delegate:?} is not the delegate of {person:?} now (none set, another delegate, or it ended or was cancelled)")]
    NotDelegate {
        /// The person answering.
        delegate: String,
        /// The person they answered for.
        person: String,
    },
    /// The request is claimed by another lease.
    #[error("request {id:?} is claimed by another provider lease")]
    ClaimedElsewhere {
        /// The request id.
        id: String,
    },
    /// The lease answers for another context than the request's.
    #[error("request {id:?} is in context {request_context:?} but the lease answers for {lease_context:?}")]
    WrongContext {
        /// The request id.
        id: String,
        /// The request's context.
        request_context: String,
        /// The lease's context.
        lease_context: String,
    },
    /// A live provider already holds the context.
    #[error("{}", duplicate_provider(.context, .name, .since, .expires, .web.as_deref()))]
    DuplicateProvider {
        /// The context.
        context: String,
        /// The live provider's name.
        name: String,
        /// When the live lease was registered (RFC 3339).
        since: String,
        /// When the live lease expires unless it heartbeats (RFC 3339).
        expires: String,
        /// When the holder is a host's web page (and HTTP API): which host, and its idle
        /// release.
        web: Option<Box<WebHolder>>,
    },
    /// The lease is not the live one of its context.
    #[error("lease is not live ({0}); register a new one with `dshq provider register`")]
    LeaseExpired(String),
    /// No live provider lease in the context (`provider revoke`).
    #[error("no live provider lease in context {0:?}; nothing to revoke")]
    NoLiveLease(String),
    /// No request is pending in the context (`claim --next`).
    #[error("no pending request in context {0:?}")]
    NothingPending(String),
    /// A wait ran past its timeout.
    #[error("no outcome for request {id:?} within {waited}")]
    WaitTimeout {
        /// The request id.
        id: String,
        /// The timeout, humanly.
        waited: String,
    },
    /// The awaited request ended without an answer; its outcome document was printed.
    #[error("{0}")]
    Ended(UserQuestionError),
    /// A config file that is not TOML, has a key that is no setting, or a value its
    /// setting refuses.
    #[error("{}:{line}: {message}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// The line of the key (1-based).
        line: usize,
        /// The key (`daemon.tick`), empty for a file that is not TOML.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// Bad or missing command-line input the parser could not catch.
    #[error("{0}")]
    Usage(String),
    /// A value the domain refuses, whatever face gave it (an empty provider name, a ttl
    /// that is not positive, an agent owning itself). The store returns this, never the
    /// CLI's [`Error::Usage`]; its stable code is `USAGE` today, which is what the CLI has
    /// always shown, and a later face (HTTP) may map it on its own.
    #[error("{0}")]
    Invalid(String),
    /// SQLite failed.
    #[error("database error: {0}")]
    Db(#[from] rusqlite::Error),
    /// PostgreSQL failed (or could not be reached). The message is the server's or the
    /// client's and never contains the connection URL, so never its password.
    #[error("PostgreSQL error: {}", pg_message(.0))]
    Pg(#[from] postgres::Error),
    /// A pragma did not take the value dshq needs (read back after setting it).
    #[error("database pragma {pragma} is {actual:?}, expected {expected:?}")]
    Pragma {
        /// The pragma name.
        pragma: &'static str,
        /// What dshq set.
        expected: String,
        /// What SQLite reports.
        actual: String,
    },
    /// The database was written by a newer dshq.
    #[error(
        "database schema version {found} is newer than this dshq knows ({known}); upgrade dshq"
    )]
    SchemaTooNew {
        /// The version in the database.
        found: i64,
        /// The newest version this binary has.
        known: i64,
    },
    /// A read command found a database that needs a migration (reads never migrate).
    #[error(
        "database {} has schema version {found} and needs migrating to {known}, which a read command does not do; run a write command (or the daemon) once with write access",
        path.display()
    )]
    NeedsMigration {
        /// The database.
        path: PathBuf,
        /// The version in the database.
        found: i64,
        /// The newest version this binary has.
        known: i64,
    },
    /// A read command found no state root at the path it resolved (reads never create
    /// one: a mistyped or forgotten `DSHQ_ROOT` must not show an empty queue).
    #[error(
        "no dshq state root at {}{}: nothing to read. Name the right one with --root DIR or DSHQ_ROOT, or start the daemon there (`dshq daemon`), which creates it; writing commands (ask, provider register, token create) create it too",
        path.display(),
        if *.dir_exists { " (the directory exists, but holds no dshq.db)" } else { "" }
    )]
    NoRoot {
        /// The root that was resolved.
        path: PathBuf,
        /// Whether the directory exists (without a database).
        dir_exists: bool,
    },
    /// A receipt was asked of a request that is not final yet.
    #[error("request {id:?} is {status}: a request has a receipt once it is final (answered, cancelled, aborted or rejected)")]
    RequestOpen {
        /// The request id.
        id: String,
        /// Its status now.
        status: String,
    },
    /// A receipt that does not verify.
    #[error(transparent)]
    Receipt(#[from] crate::protocol::receipt::ReceiptError),
    /// A mail's link refused.
    #[error(transparent)]
    Link(#[from] crate::core::mail_link::Refused),
    /// A page sign-in through the identity provider refused.
    #[error(transparent)]
    SignIn(#[from] crate::core::sign_in::Refused),
    /// Another party's signed token (a JWT) refused.
    #[error(transparent)]
    Jwt(#[from] crate::core::jwt::Refused),
    /// A file-system operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Who holds a context when that is a host's web page (from the lease's [`crate::store::HostMark`]),
/// carried by `DUPLICATE_PROVIDER` so the message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebHolder {
    /// The host's label ([`crate::store::HostMark::label`]).
    pub host: String,
    /// Its `--web-idle`, humanly (`5m`).
    pub idle: String,
}

impl WebHolder {
    /// The holder a lease's host columns describe, when it has them.
    pub fn from_columns(
        label: Option<String>,
        idle_ms: Option<crate::clock::Millis>,
    ) -> Option<Box<WebHolder>> {
        let label = label?;
        let idle = idle_ms.unwrap_or(0).max(0) as u64;
        Some(Box::new(WebHolder {
            host: crate::text::one_line(&label).into_owned(),
            idle: humantime::format_duration(std::time::Duration::from_millis(idle)).to_string(),
        }))
    }
}

/// `DUPLICATE_PROVIDER`'s message: who holds the context, in words a person can act on.
/// A host's web page is named as such (a terminal reviewer cannot "ask web"): where it
/// runs, and when it lets the context go by itself.
fn duplicate_provider(
    context: &str,
    name: &str,
    since: &str,
    expires: &str,
    web: Option<&WebHolder>,
) -> String {
    let revoke = format!("`dshq provider revoke --context {context}`");
    match web {
        Some(w) => format!(
            "the web page and HTTP API of the dshq daemon on {host} hold context {context:?} \
             for the reviewers there (since {since}). It is released when the last reviewer \
             closes the page, or {idle} after the last answer through it (the daemon's \
             --web-idle); answer on the page, wait until then, or end it now with {revoke} \
             (its claimed requests go back to pending)",
            host = w.host,
            idle = w.idle,
        ),
        None => format!(
            "provider {name:?} has held context {context:?} since {since}, until {expires} \
             unless it heartbeats; wait until then, ask {name:?} to release it, or end it with \
             {revoke}"
        ),
    }
}

/// A PostgreSQL error as one line: the server's message (with its detail) for a database
/// error, else the client's (connection refused, closed, ...).
fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({}): {detail}", db.message(), db.code().code()),
            None => format!("{} ({})", db.message(), db.code().code()),
        },
        // tokio-postgres' message names only the kind ("error performing TLS handshake"):
        // add its cause (an I/O or TLS error, never the URL, so never the password).
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> Code {
        match self {
            Error::Question(e) => e.code,
            Error::NotFound(_)
            | Error::AgentNotFound { .. }
            | Error::NothingPending(_)
            | Error::TokenNotFound(_) => Code::NotFound,
            Error::Unauthorized => Code::Unauthorized,
            Error::Forbidden => Code::Forbidden,
            Error::OwnerNotLive(_) => Code::CallerNotLive,
            Error::RequestFinal { .. } => Code::RequestFinal,
            Error::ClaimedElsewhere { .. } => Code::ClaimedElsewhere,
            Error::OwnRequest { .. } => Code::OwnRequest,
            Error::NotInGroup { .. } => Code::NotInGroup,
            Error::AlreadyVoted { .. } => Code::AlreadyVoted,
            Error::AwayInPast(_) => Code::AwayInPast,
            Error::AwaySelf(_) => Code::AwaySelf,
            Error::AwayChain(_) => Code::AwayChain,
            Error::UnknownDelegate(_) => Code::UnknownDelegate,
            Error::NotAway(_) => Code::NotAway,
            Error::NotDelegate { .. } => Code::NotDelegate,
            Error::WrongContext { .. } => Code::WrongContext,
            Error::DuplicateProvider { .. } => Code::DuplicateProvider,
            Error::LeaseExpired(_) => Code::LeaseExpired,
            Error::NoLiveLease(_) => Code::NoProvider,
            Error::WaitTimeout { .. } => Code::WaitTimeout,
            Error::Usage(_) | Error::Invalid(_) | Error::Config { .. } => Code::Usage,
            Error::Ended(e) => e.code,
            Error::Db(_)
            | Error::Pg(_)
            | Error::Pragma { .. }
            | Error::SchemaTooNew { .. }
            | Error::NeedsMigration { .. } => Code::Store,
            Error::Io { .. } => Code::Io,
            Error::NoRoot { .. } => Code::NoRoot,
            Error::RequestOpen { .. } => Code::RequestOpen,
            Error::Receipt(e) => e.code(),
            Error::Link(e) => e.code(),
            Error::SignIn(e) => e.code(),
            Error::Jwt(e) => e.code(),
        }
    }

    /// The error as the dsh error document.
    pub fn to_user_error(&self) -> UserQuestionError {
        match self {
            Error::Question(e) | Error::Ended(e) => e.clone(),
            other => UserQuestionError::new(other.code(), other.to_string()),
        }
    }

    /// Wrap an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A protocol error with `code` and `message`.
    pub fn question(code: Code, message: impl Into<String>) -> Error {
        Error::Question(UserQuestionError::new(code, message))
    }
}
