//! A request's lifecycle (spec §5): its states, which of them are final, and how a lease
//! ends. Pure; a backend stores these as their [`Status::as_str`] words.

use serde::Serialize;

/// A request's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, strum::VariantArray)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for a provider.
    Pending,
    /// Reserved by a live lease.
    Claimed,
    /// Final: answered.
    Answered,
    /// Final: cancelled by the provider side (`ASK_CANCELLED`).
    Cancelled,
    /// Final: aborted by the asker or its deadline (`ASK_ABORTED`).
    Aborted,
    /// Final: rejected at ingestion, with its code.
    Rejected,
}

impl Status {
    /// Every status, in lifecycle order (derived: no variant can be missing).
    pub const ALL: &'static [Status] = <Status as strum::VariantArray>::VARIANTS;

    /// The status as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Claimed => "claimed",
            Status::Answered => "answered",
            Status::Cancelled => "cancelled",
            Status::Aborted => "aborted",
            Status::Rejected => "rejected",
        }
    }

    /// Parse a stored status.
    pub fn parse(s: &str) -> Option<Status> {
        Self::ALL.iter().copied().find(|st| st.as_str() == s)
    }

    /// Whether the state is final (never changes again): a final request has an outcome.
    pub fn is_final(self) -> bool {
        !matches!(self, Status::Pending | Status::Claimed)
    }

    /// Whether a provider may still act on it (claim, answer, cancel) or the asker abort it.
    pub fn is_open(self) -> bool {
        !self.is_final()
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a provider lease ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::VariantArray)]
pub enum LeaseEnd {
    /// Its holder released it.
    Released,
    /// Its ttl ran out without a heartbeat (ended by whoever swept).
    Expired,
}

impl LeaseEnd {
    /// Every reason (derived).
    pub const ALL: &'static [LeaseEnd] = <LeaseEnd as strum::VariantArray>::VARIANTS;

    /// The reason as stored (`leases.end_reason`) and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseEnd::Released => "released",
            LeaseEnd::Expired => "expired",
        }
    }

    /// Parse a stored reason.
    pub fn parse(s: &str) -> Option<LeaseEnd> {
        Self::ALL.iter().copied().find(|r| r.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips_and_only_open_states_are_not_final() {
        for &st in Status::ALL {
            assert_eq!(Status::parse(st.as_str()), Some(st));
            assert_eq!(st.is_open(), !st.is_final());
            assert_eq!(
                serde_json::to_value(st).unwrap(),
                serde_json::Value::from(st.as_str())
            );
        }
        assert_eq!(Status::parse("nonsense"), None);
        let open: Vec<_> = Status::ALL
            .iter()
            .copied()
            .filter(|s| s.is_open())
            .collect();
        assert_eq!(open, [Status::Pending, Status::Claimed]);
    }

    #[test]
    fn every_lease_end_round_trips() {
        for &r in LeaseEnd::ALL {
            assert_eq!(LeaseEnd::parse(r.as_str()), Some(r));
        }
        assert_eq!(LeaseEnd::parse(""), None);
    }
}
