//! Which MCP protocol revision a request is served at, and what differs between them.
//!
//! dshq serves the handshake-era revisions (2025-11-25 and the older ones it negotiates)
//! and the stateless 2026-07-28 one side by side, chosen per request: the SDK routes a
//! request that names 2026-07-28 in its `_meta` (or on a connection that opened that
//! way) statelessly, and everything else through the session `initialize` opened. The
//! tool handlers are the same behind both; the only differences are here, at the edge:
//!
//! - 2026-07-28 has no server-to-client requests, so `review_questions` (which shows its
//!   forms with `elicitation/create`) cannot run there and says so with a stable code;
//! - the client's name and capabilities come from each request's `_meta` instead of the
//!   handshake (the SDK's `RequestContext::client_info` does that either way).

use rmcp::model::ProtocolVersion;
use rmcp::service::RequestContext;
use rmcp::RoleServer;

/// The revision family of one request (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// 2025-11-25 and before: `initialize`, a session, server-to-client requests.
    Handshake,
    /// 2026-07-28 and later: stateless, each request carrying its revision and
    /// capabilities; input from the client only inside results (`input_required`).
    Stateless,
}

impl Revision {
    /// The revision of `ctx`'s request: the one its `_meta` names, else the session's.
    pub fn of(ctx: &RequestContext<RoleServer>) -> Revision {
        Revision::of_version(ctx.protocol_version().as_ref())
    }

    /// The family of `version` (none: the oldest, handshake-era default).
    pub fn of_version(version: Option<&ProtocolVersion>) -> Revision {
        match version {
            Some(v) if !v.has_initialize() => Revision::Stateless,
            _ => Revision::Handshake,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Revision;
    use rmcp::model::ProtocolVersion;

    #[test]
    fn the_revision_family_follows_the_handshake() {
        let of = |v: &ProtocolVersion| Revision::of_version(Some(v));
        assert_eq!(of(&ProtocolVersion::V_2025_11_25), Revision::Handshake);
        assert_eq!(of(&ProtocolVersion::V_2025_06_18), Revision::Handshake);
        assert_eq!(of(&ProtocolVersion::V_2026_07_28), Revision::Stateless);
        assert_eq!(Revision::of_version(None), Revision::Handshake);
    }
}
