//! Who may do what over HTTP: the roles a web token carries and the actions each role may
//! take. Pure, so the rule is written once and every route (the API, the page, MCP) asks
//! the same question: `role.may(action)`.
//!
//! The roles nest where the issue says "also": a reviewer may do what an asker may, and
//! more. An auditor only reads the record (history, events, stats) and the requests in
//! it; it never asks or answers, so a leaked audit token changes nothing.

use std::fmt;

/// The role of a web token (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::VariantArray)]
pub enum Role {
    /// Asks, reads and aborts its own requests.
    Asker,
    /// Also claims, answers and cancels, and reads every request and the record.
    Reviewer,
    /// Reads the record: history, events, stats, and the requests in it.
    Auditor,
}

/// What a caller wants to do (a closed set; one per kind of route).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::VariantArray)]
pub enum Action {
    /// Submit a request.
    Ask,
    /// Read a request (the asker: only its own) or wait for its outcome.
    Read,
    /// List requests or follow the event stream (the asker: only its own).
    List,
    /// Abort a request as its asker (the asker: only its own).
    Abort,
    /// Claim a request.
    Claim,
    /// Answer a request.
    Answer,
    /// Cancel a request as the human.
    Cancel,
    /// Read history, events and stats.
    Audit,
}

/// How far an allowed action reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Every request (in the token's context, when it has one).
    All,
    /// Only the requests this token asked.
    Own,
}

impl Role {
    /// Every role.
    pub const ALL: &'static [Role] = <Role as strum::VariantArray>::VARIANTS;

    /// The role as written (`asker`, `reviewer`, `auditor`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Asker => "asker",
            Role::Reviewer => "reviewer",
            Role::Auditor => "auditor",
        }
    }

    /// Parse a written role.
    pub fn parse(s: &str) -> Option<Role> {
        Self::ALL.iter().copied().find(|r| r.as_str() == s)
    }

    /// Whether this role may take `action`, and over which requests; `None`: forbidden.
    pub fn may(self, action: Action) -> Option<Reach> {
        use Action::*;
        match (self, action) {
            (Role::Asker, Ask) => Some(Reach::All),
            (Role::Asker, Read | List | Abort) => Some(Reach::Own),
            (Role::Asker, Claim | Answer | Cancel | Audit) => None,
            (Role::Reviewer, _) => Some(Reach::All),
            (Role::Auditor, Read | List | Audit) => Some(Reach::All),
            (Role::Auditor, Ask | Abort | Claim | Answer | Cancel) => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_and_nest() {
        for &r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("admin"), None);
        for &a in <Action as strum::VariantArray>::VARIANTS {
            // A reviewer may do whatever an asker may, over at least as much.
            if Role::Asker.may(a).is_some() {
                assert_eq!(Role::Reviewer.may(a), Some(Reach::All), "{a:?}");
            }
        }
        assert_eq!(Role::Asker.may(Action::Answer), None);
        assert_eq!(Role::Auditor.may(Action::Ask), None);
        assert_eq!(Role::Auditor.may(Action::Audit), Some(Reach::All));
        assert_eq!(Role::Asker.may(Action::Audit), None);
    }
}
