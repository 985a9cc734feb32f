//! The audit's vocabulary: what happened ([`EventKind`]), who did it ([`Actor`]) and where a
//! request came from ([`Source`]). Pure; a backend stores each as its text form, which is
//! also what `dshq events`, `history` and `export` show, so the words never change.

use std::fmt;

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::VariantArray)]
pub enum EventKind {
    /// A request was accepted (`pending`).
    Accepted,
    /// An input was rejected at ingestion.
    Rejected,
    /// A provider claimed a request.
    Claimed,
    /// A claim went back to `pending` because its lease ended.
    Released,
    /// A provider answered.
    Answered,
    /// A reviewer voted on a request with a quorum: the voter and the answer.
    Voted,
    /// A provider cancelled (`ASK_CANCELLED`).
    Cancelled,
    /// The asker or a deadline aborted (`ASK_ABORTED`).
    Aborted,
    /// A provider lease was registered.
    LeaseRegistered,
    /// A provider lease was released by its holder.
    LeaseReleased,
    /// A provider lease ran out.
    LeaseExpired,
    /// A provider lease was ended on purpose by someone else (`dshq provider revoke`).
    LeaseRevoked,
    /// An agent entered the registry.
    AgentEntered,
    /// An agent exited.
    AgentExited,
    /// An agent ended because its owner ended.
    AgentEnded,
    /// An agent's ttl ran out.
    AgentExpired,
    /// `dshq prune` removed a prefix of the log (and the final requests it concerned): the
    /// checkpoint the chain is verified from, carrying the removed prefix's head.
    Pruned,
    /// The ladder's reminder rung ran: the request is still unanswered.
    Reminded,
    /// The ladder's escalation rung ran (and moved the request when `to` is in its data).
    Escalated,
    /// The ladder's expiry rung ended the request: `ASK_EXPIRED` with no answer, or, when
    /// the asker declared it, answered by its default (`decidedBy: "policy"`).
    Expired,
    /// A person signed in to the page through the identity provider: the claims read and
    /// what they decided (no token).
    SignedIn,
    /// A person set an away notice: away until a time, their delegate answering for them.
    AwaySet,
    /// An away notice was cancelled before its end.
    AwayCancelled,
    /// An away notice reached its end (recorded by the sweep; it stopped holding at its
    /// end whether or not this was written yet).
    AwayEnded,
}

impl EventKind {
    /// Every kind (derived: no variant can be missing).
    pub const ALL: &'static [EventKind] = <EventKind as strum::VariantArray>::VARIANTS;

    /// The kind as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Accepted => "accepted",
            EventKind::Rejected => "rejected",
            EventKind::Claimed => "claimed",
            EventKind::Released => "released",
            EventKind::Answered => "answered",
            EventKind::Voted => "voted",
            EventKind::Cancelled => "cancelled",
            EventKind::Aborted => "aborted",
            EventKind::LeaseRegistered => "lease-registered",
            EventKind::LeaseReleased => "lease-released",
            EventKind::LeaseExpired => "lease-expired",
            EventKind::LeaseRevoked => "lease-revoked",
            EventKind::AgentEntered => "agent-entered",
            EventKind::AgentExited => "agent-exited",
            EventKind::AgentEnded => "agent-ended",
            EventKind::AgentExpired => "agent-expired",
            EventKind::Pruned => "pruned",
            EventKind::Reminded => "reminded",
            EventKind::Escalated => "escalated",
            EventKind::Expired => "expired",
            EventKind::SignedIn => "signed-in",
            EventKind::AwaySet => "away-set",
            EventKind::AwayCancelled => "away-cancelled",
            EventKind::AwayEnded => "away-ended",
        }
    }

    /// Parse a stored kind.
    pub fn parse(s: &str) -> Option<EventKind> {
        Self::ALL.iter().copied().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who did what an event records.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Actor {
    /// The daemon (ingesting inbox files) or a sweep (expiries, deadlines).
    Daemon,
    /// A `dshq` command run by hand (`dshq ask` rejecting its input).
    Cli,
    /// An asker without an agent identity (an abort file, `dshq abort`).
    Asker,
    /// A provider, by the name its lease was registered with.
    Provider(String),
    /// A registered agent, by id.
    Agent(String),
    /// The web page, by the signed-in name (a later face).
    Web(String),
    /// An MCP client, by its name (a later face).
    Mcp(String),
    /// A reviewer who pressed a button of a Slack message: the dshq reviewer
    /// the Slack user maps to in the config file (`[slack.users]`) and the Slack user id,
    /// both recorded so the audit shows who acted and from which Slack account.
    Slack {
        /// The dshq reviewer (`alice`).
        reviewer: String,
        /// The Slack user id (`U0123ABCD`).
        user: String,
    },
    /// A mail's recipient, answering through the link it was sent.
    Mail(String),
    /// A person signed in to the page through the identity provider: the person and the
    /// provider's subject (`sub`), both recorded, as for Slack.
    Oidc {
        /// The person (`alice`).
        person: String,
        /// The provider's subject.
        subject: String,
    },
    /// A person who pressed a button of a Telegram message: the person the config file's
    /// `[people]` lists the Telegram user under (`telegram:USERID`) and the user id, both
    /// recorded, as for Slack.
    Telegram {
        /// The person (`alice`).
        person: String,
        /// The Telegram user id (`123456789`).
        user: String,
    },
    /// A Microsoft Teams user who pressed a card's action: the person the people
    /// directory lists their `teams:` identity under and their Entra ID (AAD) object id,
    /// both recorded, as for Slack.
    Teams {
        /// The person (`alice`).
        person: String,
        /// The user's AAD object id.
        user: String,
    },
}

impl Actor {
    /// The actor as stored and shown: `daemon`, `cli`, `asker`, `provider:NAME`,
    /// `agent:ID`, `web:NAME`, `mcp:CLIENT`, `slack:REVIEWER@SLACKUSER`.
    /// `agent:ID`, `web:NAME`, `mcp:CLIENT`, `mail:ADDRESS`.
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        match self {
            Actor::Daemon => Cow::Borrowed("daemon"),
            Actor::Cli => Cow::Borrowed("cli"),
            Actor::Asker => Cow::Borrowed("asker"),
            Actor::Provider(n) => Cow::Owned(format!("provider:{n}")),
            Actor::Agent(n) => Cow::Owned(format!("agent:{n}")),
            Actor::Web(n) => Cow::Owned(format!("web:{n}")),
            Actor::Mcp(n) => Cow::Owned(format!("mcp:{n}")),
            Actor::Slack { reviewer, user } => Cow::Owned(format!("slack:{reviewer}@{user}")),
            Actor::Mail(n) => Cow::Owned(format!("mail:{n}")),
            Actor::Oidc { person, subject } => Cow::Owned(format!("oidc:{person}@{subject}")),
            Actor::Teams { person, user } => Cow::Owned(format!("teams:{person}@{user}")),
            Actor::Telegram { person, user } => Cow::Owned(format!("telegram:{person}@{user}")),
        }
    }

    /// The identity a reviewer group names (`[groups]`): the actor as shown, but for a
    /// Slack reviewer `slack:REVIEWER` (whichever Slack account maps to them).
    pub fn identity(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Actor::Slack { reviewer, .. } => std::borrow::Cow::Owned(format!("slack:{reviewer}")),
            other => other.as_str(),
        }
    }

    /// Parse a stored actor.
    pub fn parse(s: &str) -> Option<Actor> {
        Some(match s {
            "daemon" => Actor::Daemon,
            "cli" => Actor::Cli,
            "asker" => Actor::Asker,
            _ => {
                let (kind, name) = s.split_once(':')?;
                let name = name.to_string();
                match kind {
                    "provider" => Actor::Provider(name),
                    "agent" => Actor::Agent(name),
                    "web" => Actor::Web(name),
                    "mcp" => Actor::Mcp(name),
                    "slack" => {
                        let (reviewer, user) = name.rsplit_once('@')?;
                        if reviewer.is_empty() || user.is_empty() {
                            return None;
                        }
                        Actor::Slack {
                            reviewer: reviewer.to_string(),
                            user: user.to_string(),
                        }
                    }
                    "mail" => Actor::Mail(name),
                    // A person's name holds no '@'; a subject may.
                    "oidc" => {
                        let (person, subject) = name.split_once('@')?;
                        if person.is_empty() || subject.is_empty() {
                            return None;
                        }
                        Actor::Oidc {
                            person: person.to_string(),
                            subject: subject.to_string(),
                        }
                    }
                    // A user id is digits: the person is what comes before the last '@'.
                    "telegram" => {
                        let (person, user) = name.rsplit_once('@')?;
                        if person.is_empty() || user.is_empty() {
                            return None;
                        }
                        Actor::Telegram {
                            person: person.to_string(),
                            user: user.to_string(),
                        }
                    }
                    "teams" => {
                        let (person, user) = name.split_once('@')?;
                        if person.is_empty() || user.is_empty() {
                            return None;
                        }
                        Actor::Teams {
                            person: person.to_string(),
                            user: user.to_string(),
                        }
                    }
                    _ => return None,
                }
            }
        })
    }

    /// The provider's name, for a provider actor.
    pub fn provider(&self) -> Option<&str> {
        match self {
            Actor::Provider(n) => Some(n),
            _ => None,
        }
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

/// Where a request (or a rejected input) came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// `dshq ask`.
    Cli,
    /// An inbox file, by name.
    Inbox(String),
    /// The web API (a later face).
    Web,
    /// The MCP server over stdio, by the client's name (`mcp:CLIENT`): its asks are
    /// recorded as `mcp:CLIENT` in the event log. (Over HTTP an MCP client asks with a web
    /// token, and its requests are the token's: [`Source::WebToken`].)
    Mcp(String),
    /// The HTTP API, by the name of the web token that asked (`web:NAME`): an asker token
    /// reads and aborts only the requests whose source names it.
    WebToken(String),
}

impl Source {
    /// The source as stored and shown: `cli`, `inbox:FILE`, `web`, `mcp:CLIENT`, `web:NAME`.
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        match self {
            Source::Cli => Cow::Borrowed("cli"),
            Source::Inbox(name) => Cow::Owned(format!("inbox:{name}")),
            Source::Web => Cow::Borrowed("web"),
            Source::Mcp(name) => Cow::Owned(format!("mcp:{name}")),
            Source::WebToken(name) => Cow::Owned(format!("web:{name}")),
        }
    }

    /// Parse a stored source.
    pub fn parse(s: &str) -> Option<Source> {
        Some(match s {
            "cli" => Source::Cli,
            "web" => Source::Web,
            _ => {
                if let Some(name) = s.strip_prefix("web:") {
                    Source::WebToken(name.to_string())
                } else if let Some(name) = s.strip_prefix("mcp:") {
                    Source::Mcp(name.to_string())
                } else {
                    Source::Inbox(s.strip_prefix("inbox:")?.to_string())
                }
            }
        })
    }

    /// Who rejects an input from this source: the daemon for inbox files, the CLI for
    /// `dshq ask`, the face itself for the web and MCP.
    pub fn rejecting_actor(&self) -> Actor {
        match self {
            Source::Cli => Actor::Cli,
            Source::Inbox(_) => Actor::Daemon,
            Source::Web => Actor::Web("api".into()),
            Source::Mcp(name) => Actor::Mcp(name.clone()),
            Source::WebToken(name) => Actor::Web(name.clone()),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_kind_round_trips() {
        for &k in EventKind::ALL {
            assert_eq!(EventKind::parse(k.as_str()), Some(k), "{k:?}");
        }
        assert_eq!(EventKind::parse("lease"), None);
    }

    // One value per variant: the match below has no wildcard, so a new variant fails to
    // compile until it is added here.
    fn actor_samples() -> Vec<Actor> {
        let all = vec![
            Actor::Daemon,
            Actor::Cli,
            Actor::Asker,
            Actor::Provider("alice".into()),
            Actor::Agent("agent-1".into()),
            Actor::Web("bob".into()),
            Actor::Mcp("claude:desktop".into()),
            Actor::Slack {
                reviewer: "alice".into(),
                user: "U0123ABCD".into(),
            },
            Actor::Mail("alice@example.com".into()),
            // A subject may hold '@' (the person never does).
            Actor::Oidc {
                person: "alice".into(),
                subject: "alice@corp.example".into(),
            },
            Actor::Telegram {
                person: "alice".into(),
                user: "123456789".into(),
            },
            Actor::Teams {
                person: "alice".into(),
                user: "6f1c2a4e-0d7b-4c2e-9a1e-3b5d7f9a1c2e".into(),
            },
        ];
        for a in &all {
            match a {
                Actor::Daemon
                | Actor::Cli
                | Actor::Asker
                | Actor::Provider(_)
                | Actor::Agent(_)
                | Actor::Web(_)
                | Actor::Mcp(_)
                | Actor::Slack { .. } => {}
                Actor::Mail(_) | Actor::Oidc { .. } | Actor::Teams { .. } => {}
                Actor::Telegram { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_actor_round_trips() {
        for a in actor_samples() {
            assert_eq!(Actor::parse(&a.as_str()), Some(a.clone()), "{a:?}");
            assert_eq!(a.to_string(), a.as_str());
        }
        assert_eq!(
            Actor::parse("provider:"),
            Some(Actor::Provider(String::new()))
        );
        assert_eq!(Actor::parse("stranger"), None);
        assert_eq!(Actor::parse("slack:alice"), None);
        assert_eq!(Actor::parse("slack:@U1"), None);
        assert_eq!(Actor::parse("root:x"), None);
    }

    #[test]
    fn every_source_round_trips() {
        let all = [
            Source::Cli,
            Source::Inbox("q-1.json".into()),
            Source::Web,
            Source::Mcp("claude-desktop".into()),
            Source::WebToken("alice".into()),
        ];
        for s in &all {
            match s {
                Source::Cli
                | Source::Inbox(_)
                | Source::Web
                | Source::Mcp(_)
                | Source::WebToken(_) => {}
            }
            assert_eq!(Source::parse(&s.as_str()).as_ref(), Some(s), "{s:?}");
        }
        assert_eq!(Source::parse("ftp"), None);
        assert_eq!(Source::parse("mcp"), None);
    }

    #[test]
    fn a_rejection_is_recorded_by_the_face_that_rejected_it() {
        assert_eq!(Source::Cli.rejecting_actor(), Actor::Cli);
        assert_eq!(
            Source::Inbox("x.json".into()).rejecting_actor(),
            Actor::Daemon
        );
        assert_eq!(
            Source::Mcp("claude".into()).rejecting_actor(),
            Actor::Mcp("claude".into())
        );
    }
}
