//! The MCP face: an MCP server (the official Rust SDK, `rmcp`) through which any MCP
//! agent asks dshq's durable questions, and a human at an MCP client with elicitation
//! answers them.
//!
//! Why a face and not a bridge: the tools call the same use-cases as `dshq ask`, `wait`,
//! `abort` and the reviewer's screen ([`crate::app`]), so a question asked over MCP is a
//! request like any other (an outcome file, the event log, the registry's rules), and it
//! outlives the MCP session that asked it: a host that times out or restarts collects
//! the answer later with `get_answer`, or through the MCP task whose id is the request id.
//!
//! One concern per file: [`backend`] (where the store work runs: the stdio server's own
//! database thread, or the async host's), [`tools`] (the tool list and the schemas,
//! generated from the protocol's types), [`ask`] (ask, get, abort), [`review`] (the
//! reviewer's side over elicitation), [`review_next`] (the reviewer's side at 2026-07-28,
//! through `input_required` results), [`state`] (their signed `requestState` and the
//! reviews in flight), [`tasks`] (task-augmented asks), [`errors`]
//! (protocol codes as tool errors written for a model), [`revision`] (what differs
//! between the handshake-era revisions and the stateless 2026-07-28 one, served side by
//! side), [`server`] (the `ServerHandler`)
//! and [`http`] (Streamable HTTP at `/mcp` on the host).

pub mod ask;
pub mod backend;
pub mod errors;
pub mod http;
pub mod review;
pub mod review_next;
pub mod revision;
pub mod server;
pub mod state;
pub mod tasks;
pub mod tools;

use std::time::Duration;

use crate::protocol::types::AgentRef;

/// How long `ask_user_question` waits by default before it returns "pending": short
/// enough for the common hosts' tool-call timeouts (60 s is the usual one).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(20);

/// The longest wait a tool call may ask for (`waitSeconds`) by default.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(50);

/// How long one `review_questions` form may stay unanswered by default.
pub const DEFAULT_FORM_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The settings of one MCP server.
#[derive(Debug, Clone)]
pub struct Config {
    /// The asking agent of this session, used when a request names none (the registry's
    /// CALLER_NOT_LIVE / DELEGATED_CALLER rules then apply).
    pub agent: Option<AgentRef>,
    /// How long a tool call waits when it does not say.
    pub wait: Duration,
    /// The longest wait a tool call may ask for.
    pub max_wait: Duration,
    /// The ttl of the provider lease `review_questions` and `review_next` hold.
    pub review_lease_ttl: Duration,
    /// How long one review form may stay unanswered before the review stops (the lease
    /// is not held for a human who left, or a client that vanished without a word).
    pub review_form_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            agent: None,
            wait: DEFAULT_WAIT,
            max_wait: DEFAULT_MAX_WAIT,
            review_lease_ttl: Duration::from_secs(30),
            review_form_timeout: DEFAULT_FORM_TIMEOUT,
        }
    }
}

/// The client's name as events record it (`mcp:NAME`): the name the client gave at
/// `initialize`, kept to the id charset (anything else becomes `-`), at most 64
/// characters; `client` when it gave none. The name is the client's own claim, so it is
/// made safe to show and store, never trusted.
pub fn client_name(raw: Option<&str>) -> String {
    let cleaned: String = raw
        .unwrap_or("")
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if cleaned.trim_matches('-').is_empty() {
        "client".to_string()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::client_name;

    #[test]
    fn a_client_name_is_kept_to_the_id_charset() {
        assert_eq!(client_name(Some("mcp-test")), "mcp-test");
        assert_eq!(client_name(Some("Claude Desktop")), "Claude-Desktop");
        assert_eq!(client_name(Some("a\u{1b}[31mb")), "a--31mb");
        assert_eq!(client_name(Some("")), "client");
        assert_eq!(client_name(None), "client");
        assert_eq!(client_name(Some(&"x".repeat(100))).len(), 64);
    }
}
