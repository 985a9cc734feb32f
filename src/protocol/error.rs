//! `UserQuestionError` and the stable error codes.
//!
//! Codes are the API for programs: they never change meaning once released. Messages are
//! for people and may improve. The first group is dsh's vocabulary (spec §3, §4, §6); the
//! second group is what a durable, multi-process queue adds (a request that does not
//! exist, one that is already final, a wait that timed out, the store failing).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

// The list of every code (`ALL_CODES`) is derived from this enum (`strum::VariantArray`),
// so a new variant can never be missing from it, nor from `Code::parse`. (A plain comment:
// doc comments become the JSON Schema's description.)
/// Every stable error code dshq reports.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, strum::VariantArray,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Code {
    /// Malformed input: not JSON, wrong type, unknown/missing field, bad id, duplicates, size.
    BadRequest,
    /// The request was aborted by the asker, or its deadline passed.
    AskAborted,
    /// The request has no questions.
    EmptyQuestions,
    /// The asking agent is not a live registry instance.
    CallerNotLive,
    /// The asking agent is live but owned by another agent (it has no human answerer).
    DelegatedCaller,
    /// An intent that names no option of its question, or that has no `detail`.
    BadIntent,
    /// `requireProvider` was set and no provider lease is live in the context.
    NoProvider,
    /// A request id that exists already with different content.
    DuplicateId,
    /// An answer that breaks one of the answer rules (spec §4).
    BadAnswer,
    /// The human (provider side) cancelled the request.
    AskCancelled,
    /// Nobody answered: the request's ladder expired it (`ladder.expireAfter`).
    /// Not the asker's abort, nor its `deadline`/`timeout` (`ASK_ABORTED`).
    AskExpired,
    /// A live provider lease already exists in the context.
    DuplicateProvider,
    /// The lease is not the live one of its context (expired, released or unknown).
    LeaseExpired,
    /// No request (or agent) with that id.
    NotFound,
    /// The request is already in a final state; final states never change.
    RequestFinal,
    /// The request is claimed by another lease.
    ClaimedElsewhere,
    /// The lease answers for another context than the request's.
    WrongContext,
    /// Waiting for an outcome ran past its timeout.
    WaitTimeout,
    /// The event log's hash chain does not verify (an event was changed, removed or reordered).
    AuditBroken,
    /// Another daemon already runs on this state root.
    DaemonRunning,
    /// The state root (or a directory or the database in it) can be changed by someone
    /// other than its user, or a key or secret file it holds or a flag names is another
    /// user's or readable by others: refused, as ssh refuses such key files.
    UnsafeRoot,
    /// A command that needs an interactive terminal ran without one, or bad flags.
    Usage,
    /// The database failed (I/O error, corruption, schema newer than this binary).
    Store,
    /// A file-system operation failed.
    Io,
    /// An HTTP call without a valid bearer token (missing, wrong or revoked).
    Unauthorized,
    /// An HTTP call whose token's role (or context) may not take that action.
    Forbidden,
    /// An HTTP request body over the size limit (the same limit as inbox files).
    TooLarge,
    /// A read command (`list`, `show`, `history`, ...) named a state root that does not
    /// exist: reads never create one (a mistyped `DSHQ_ROOT` is not an empty queue).
    NoRoot,
    /// An MCP `requestState` this server did not issue to this caller for this call
    /// (forged, altered, expired or another caller's), or one already used (a replay).
    BadReviewState,
    /// An answer that gives an edited text (`edited`) where no edit is allowed: on a
    /// question that is neither a plan review nor `editable: true` (or a plan review the
    /// asker made `editable: false`), or with a plan review's decline.
    EditNotAllowed,
    /// A reviewer voted on a request with a quorum that they asked themselves (by name,
    /// on any face): the asker's own vote never counts.
    OwnRequest,
    /// A reviewer outside a request's quorum group voted on it.
    NotInGroup,
    /// A reviewer voted again on a request with a quorum, for another answer: a vote
    /// cannot change (the same answer again is counted once).
    AlreadyVoted,
    /// A receipt was asked of a request that is still open (pending or claimed): it has
    /// one once it is final.
    RequestOpen,
    /// A file that is not an intact receipt: not one, changed after it was signed, or
    /// its signature does not verify.
    ReceiptInvalid,
    /// An intact receipt signed by a key that is not one the verifier trusts.
    ReceiptUntrustedKey,
    /// An intact receipt of another request than the one named (or in an outcome file
    /// that says something else than the receipt signed).
    ReceiptMismatch,
    /// A request to the Slack interactions endpoint whose `X-Slack-Signature` is missing
    /// or does not match (not signed with the app's signing secret).
    SlackBadSignature,
    /// A request to the Slack interactions endpoint signed, but with a timestamp outside
    /// Slack's five-minute window (a replay).
    SlackStaleRequest,
    /// A Slack user that the config file's `[slack.users]` maps to no dshq reviewer
    /// pressed a button: refused, nothing recorded.
    SlackUnknownUser,
    /// An update posted to the Telegram webhook without the webhook's secret token in
    /// `X-Telegram-Bot-Api-Secret-Token` (not sent by Telegram for this bot).
    TelegramBadSecret,
    /// A Telegram user whom the config file's `[people]` lists for no person
    /// (`telegram:USERID`) pressed a button: refused, nothing recorded.
    TelegramUnknownUser,
    /// A mail's link that is not one this root signed, or that was changed.
    LinkInvalid,
    /// A mail's link past its expiry.
    LinkExpired,
    /// A mail's link through which an answer was already sent.
    LinkUsed,
    /// dsh 0.2's name: a request's wait window (`wait.timeoutMs`) that is not a safe
    /// integer from 1 to 2147483647 milliseconds.
    BadTimeout,
    /// dsh 0.2's name: a second request on a tool call that already has one (another
    /// request under the call's id): one call, one question, one answer.
    DuplicateWait,
    /// No daemon serves the root a file asker dropped its request into.
    NoDaemon,
    /// A page sign-in through the identity provider whose callback's state is missing, not
    /// the one this browser started, or of a sign-in that finished already (a replay).
    OidcState,
    /// An ID token whose nonce is not the sign-in's.
    OidcNonce,
    /// An ID token issued by another than the configured identity provider.
    OidcIssuer,
    /// An ID token not meant for dshq (its audience is not dshq's client id).
    OidcAudience,
    /// An ID token past its expiry.
    OidcExpired,
    /// An ID token that is unsigned (`alg: none`) or signed with an algorithm dshq does not
    /// allow (an HMAC keyed with the client secret).
    OidcUnsigned,
    /// An ID token signed by a key the identity provider does not publish (made up, or
    /// rotated out), after the key set was fetched again.
    OidcUnknownKey,
    /// An ID token whose signature does not verify with the provider's key.
    OidcBadSignature,
    /// The identity provider refused the sign-in's authorization code (used already, expired,
    /// or its PKCE verifier does not match).
    OidcCodeRejected,
    /// The identity provider cannot be reached, or answered with an error or with something
    /// that is not OpenID Connect.
    OidcProvider,
    /// A person signed in at the identity provider whom no rule of the config file's
    /// `[[oidc.rule]]` admits, or for whom no person can be named.
    OidcNotMapped,
    /// A sign-in's return address (`next`) that is not a path on this site: an open redirect.
    BadReturnUrl,
    /// A signed token from another party (a chat service's call, an identity provider's
    /// access token) that is not a well-formed JWT.
    JwtMalformed,
    /// A signed token that is unsigned (`alg: none`) or signed with an algorithm dshq does
    /// not allow (only RS256 and ES256: never an HMAC).
    JwtUnsigned,
    /// A signed token issued by another than the configured issuer.
    JwtIssuer,
    /// A signed token not meant for this audience.
    JwtAudience,
    /// A signed token past its expiry, or not valid yet, beyond the leeway.
    JwtExpired,
    /// A signed token whose key the issuer does not publish (made up, or rotated out), after
    /// the key set was fetched again where the rate limit allowed.
    JwtUnknownKey,
    /// A signed token whose signature does not verify with the issuer's key.
    JwtBadSignature,
    /// The issuer's OpenID metadata or key set cannot be fetched, or is not what OpenID says.
    JwtKeys,
    /// An away notice whose end is not in the future.
    AwayInPast,
    /// An away notice that names the person as their own delegate.
    AwaySelf,
    /// An away notice that would chain delegations: the delegate is away themselves, or
    /// the person is someone else's delegate now.
    AwayChain,
    /// An away notice whose delegate is no reviewer the people directory or the web
    /// tokens know.
    UnknownDelegate,
    /// An away notice cancelled where the person has none.
    NotAway,
    /// An answer "for" a person whose delegate the answerer is not now (none set, another
    /// delegate, or it ended or was cancelled).
    NotDelegate,
    /// A call to the Teams messaging endpoint whose token's `serviceUrl` claim is not the
    /// activity's service URL.
    TeamsServiceUrl,
    /// A Teams user whom the people directory does not list (`teams:OBJECTID`).
    TeamsUnknownUser,
}

impl Code {
    /// The code as it is written on the wire, e.g. `BAD_REQUEST`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::BadRequest => "BAD_REQUEST",
            Code::AskAborted => "ASK_ABORTED",
            Code::EmptyQuestions => "EMPTY_QUESTIONS",
            Code::CallerNotLive => "CALLER_NOT_LIVE",
            Code::DelegatedCaller => "DELEGATED_CALLER",
            Code::BadIntent => "BAD_INTENT",
            Code::NoProvider => "NO_PROVIDER",
            Code::DuplicateId => "DUPLICATE_ID",
            Code::BadAnswer => "BAD_ANSWER",
            Code::AskCancelled => "ASK_CANCELLED",
            Code::AskExpired => "ASK_EXPIRED",
            Code::DuplicateProvider => "DUPLICATE_PROVIDER",
            Code::LeaseExpired => "LEASE_EXPIRED",
            Code::NotFound => "NOT_FOUND",
            Code::RequestFinal => "REQUEST_FINAL",
            Code::ClaimedElsewhere => "CLAIMED_ELSEWHERE",
            Code::WrongContext => "WRONG_CONTEXT",
            Code::WaitTimeout => "WAIT_TIMEOUT",
            Code::AuditBroken => "AUDIT_BROKEN",
            Code::DaemonRunning => "DAEMON_RUNNING",
            Code::UnsafeRoot => "UNSAFE_ROOT",
            Code::Usage => "USAGE",
            Code::Store => "STORE",
            Code::Io => "IO",
            Code::Unauthorized => "UNAUTHORIZED",
            Code::Forbidden => "FORBIDDEN",
            Code::TooLarge => "TOO_LARGE",
            Code::NoRoot => "NO_ROOT",
            Code::BadReviewState => "BAD_REVIEW_STATE",
            Code::EditNotAllowed => "EDIT_NOT_ALLOWED",
            Code::OwnRequest => "OWN_REQUEST",
            Code::NotInGroup => "NOT_IN_GROUP",
            Code::AlreadyVoted => "ALREADY_VOTED",
            Code::RequestOpen => "REQUEST_OPEN",
            Code::ReceiptInvalid => "RECEIPT_INVALID",
            Code::ReceiptUntrustedKey => "RECEIPT_UNTRUSTED_KEY",
            Code::ReceiptMismatch => "RECEIPT_MISMATCH",
            Code::SlackBadSignature => "SLACK_BAD_SIGNATURE",
            Code::SlackStaleRequest => "SLACK_STALE_REQUEST",
            Code::SlackUnknownUser => "SLACK_UNKNOWN_USER",
            Code::TelegramBadSecret => "TELEGRAM_BAD_SECRET",
            Code::TelegramUnknownUser => "TELEGRAM_UNKNOWN_USER",
            Code::LinkInvalid => "LINK_INVALID",
            Code::LinkExpired => "LINK_EXPIRED",
            Code::LinkUsed => "LINK_USED",
            Code::BadTimeout => "BAD_TIMEOUT",
            Code::DuplicateWait => "DUPLICATE_WAIT",
            Code::NoDaemon => "NO_DAEMON",
            Code::OidcState => "OIDC_STATE",
            Code::OidcNonce => "OIDC_NONCE",
            Code::OidcIssuer => "OIDC_ISSUER",
            Code::OidcAudience => "OIDC_AUDIENCE",
            Code::OidcExpired => "OIDC_EXPIRED",
            Code::OidcUnsigned => "OIDC_UNSIGNED",
            Code::OidcUnknownKey => "OIDC_UNKNOWN_KEY",
            Code::OidcBadSignature => "OIDC_BAD_SIGNATURE",
            Code::OidcCodeRejected => "OIDC_CODE_REJECTED",
            Code::OidcProvider => "OIDC_PROVIDER",
            Code::OidcNotMapped => "OIDC_NOT_MAPPED",
            Code::BadReturnUrl => "BAD_RETURN_URL",
            Code::JwtMalformed => "JWT_MALFORMED",
            Code::JwtUnsigned => "JWT_UNSIGNED",
            Code::JwtIssuer => "JWT_ISSUER",
            Code::JwtAudience => "JWT_AUDIENCE",
            Code::JwtExpired => "JWT_EXPIRED",
            Code::JwtUnknownKey => "JWT_UNKNOWN_KEY",
            Code::JwtBadSignature => "JWT_BAD_SIGNATURE",
            Code::JwtKeys => "JWT_KEYS",
            Code::AwayInPast => "AWAY_IN_PAST",
            Code::AwaySelf => "AWAY_SELF",
            Code::AwayChain => "AWAY_CHAIN",
            Code::UnknownDelegate => "UNKNOWN_DELEGATE",
            Code::NotAway => "NOT_AWAY",
            Code::NotDelegate => "NOT_DELEGATE",
            Code::TeamsServiceUrl => "TEAMS_SERVICE_URL",
            Code::TeamsUnknownUser => "TEAMS_UNKNOWN_USER",
        }
    }

    /// Parse a wire code (`BAD_REQUEST`) back into a [`Code`].
    pub fn parse(s: &str) -> Option<Code> {
        ALL_CODES.iter().copied().find(|c| c.as_str() == s)
    }

    /// The process exit status a command ends with when it fails with this code.
    ///
    /// Documented in the README; grouped so scripts can branch on the class of failure.
    pub fn exit_status(self) -> i32 {
        match self {
            Code::Store | Code::Io => 1,
            Code::Usage => 2,
            Code::BadRequest
            | Code::EmptyQuestions
            | Code::BadIntent
            | Code::DuplicateId
            | Code::BadAnswer
            | Code::BadReviewState
            | Code::EditNotAllowed
            | Code::BadTimeout
            | Code::DuplicateWait => 3,
            Code::NotFound => 4,
            Code::NoProvider
            | Code::DuplicateProvider
            | Code::LeaseExpired
            | Code::ClaimedElsewhere
            | Code::WrongContext => 5,
            Code::RequestFinal => 6,
            Code::CallerNotLive | Code::DelegatedCaller => 7,
            Code::AskAborted | Code::AskCancelled | Code::AskExpired => 8,
            Code::WaitTimeout => 9,
            Code::AuditBroken => 10,
            Code::DaemonRunning => 11,
            Code::UnsafeRoot => 12,
            Code::Unauthorized => 13,
            Code::Forbidden | Code::TooLarge | Code::OwnRequest | Code::NotInGroup => 14,
            Code::AlreadyVoted => 6,
            Code::NoRoot => 15,
            Code::RequestOpen => 16,
            Code::ReceiptInvalid | Code::ReceiptUntrustedKey | Code::ReceiptMismatch => 17,
            Code::SlackBadSignature | Code::SlackStaleRequest => 13,
            Code::SlackUnknownUser => 14,
            Code::TelegramBadSecret => 13,
            Code::TelegramUnknownUser => 14,
            Code::LinkInvalid | Code::LinkExpired | Code::LinkUsed => 18,
            Code::NoDaemon => 19,
            Code::OidcState
            | Code::OidcNonce
            | Code::OidcIssuer
            | Code::OidcAudience
            | Code::OidcExpired
            | Code::OidcUnsigned
            | Code::OidcUnknownKey
            | Code::OidcBadSignature
            | Code::OidcCodeRejected
            | Code::OidcProvider => 13,
            Code::OidcNotMapped => 14,
            Code::BadReturnUrl => 3,
            Code::JwtMalformed
            | Code::JwtUnsigned
            | Code::JwtIssuer
            | Code::JwtAudience
            | Code::JwtExpired
            | Code::JwtUnknownKey
            | Code::JwtBadSignature
            | Code::JwtKeys => 13,
            Code::AwayInPast | Code::AwaySelf | Code::AwayChain | Code::UnknownDelegate => 3,
            Code::NotAway => 4,
            Code::NotDelegate => 14,
            Code::TeamsServiceUrl => 13,
            Code::TeamsUnknownUser => 14,
        }
    }
}

/// Every code, in declaration (documentation) order; derived from the enum.
pub const ALL_CODES: &[Code] = <Code as strum::VariantArray>::VARIANTS;

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error document of dsh: `{name: "UserQuestionError", code, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[error("{code}: {message}")]
pub struct UserQuestionError {
    /// Always `"UserQuestionError"`, as in dsh.
    pub name: String,
    /// The stable code.
    pub code: Code,
    /// A message a person can act on.
    pub message: String,
}

impl UserQuestionError {
    /// A new error with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        UserQuestionError {
            name: "UserQuestionError".to_string(),
            code,
            message: message.into(),
        }
    }
}

/// Shorthand for building an error in the checks.
pub(crate) fn err(code: Code, message: impl Into<String>) -> UserQuestionError {
    UserQuestionError::new(code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_wire_spelling() {
        for &c in ALL_CODES {
            assert_eq!(Code::parse(c.as_str()), Some(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
    }

    #[test]
    fn error_document_has_dsh_shape() {
        let e = UserQuestionError::new(Code::NoProvider, "nobody is answering");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "UserQuestionError", "code": "NO_PROVIDER", "message": "nobody is answering"})
        );
    }
}
