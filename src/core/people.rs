//! People and identities: who a reviewer (or an asker) is, across faces. Pure.
//!
//! An [`Identity`] is a face and a name on that face (`web:alice`, `mail:alice@example.com`,
//! `slack:U0123ABCD`); a person is a name that identities belong to. The config file's
//! `[people]` table is the directory ([`People`]): it links identities whose names differ
//! to one person. An identity the directory does not list belongs to the person named
//! after the face (`provider:bob`, `web:bob` and `mcp:bob` are one person, `bob`), so a
//! single reviewer, or a team whose names agree on every face, needs no directory.
//!
//! Why persons: a two-person rule must not be met by one person on two faces, and the
//! asker must not approve their own request from another face. Everything that counts
//! reviewers (a quorum, a group, the asker check, one vote per person) counts persons, so
//! the rule is written once here and every face (the terminal, the page, HTTP, MCP, Slack,
//! a mail link, and faces still to come: an OIDC subject, a Telegram or Teams user) only
//! has to name the identity it authenticated.

use std::collections::BTreeMap;

use crate::core::audit::Actor;

/// The face an identity is on (a closed set; a new face is a new variant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::VariantArray)]
pub enum Face {
    /// A provider lease's name (the terminal, `dshq answer --name`, an answer file).
    Provider,
    /// A web token's name (the page, the HTTP API, MCP over HTTP).
    Web,
    /// An MCP client's name (MCP over stdio).
    Mcp,
    /// A Slack user id (`U0123ABCD`).
    Slack,
    /// A mail address (a mail link's recipient).
    Mail,
    /// An asking agent's id.
    Agent,
    /// An identity provider's subject (`sub`), signed in to the page.
    Oidc,
    /// A Microsoft Teams user, by their Entra ID (AAD) object id.
    Teams,
    /// A Telegram user id (`123456789`): the only way a Telegram user is admitted.
    Telegram,
}

impl Face {
    /// Every face.
    pub const ALL: &'static [Face] = <Face as strum::VariantArray>::VARIANTS;

    /// The face as written before the colon.
    pub fn as_str(self) -> &'static str {
        match self {
            Face::Provider => "provider",
            Face::Web => "web",
            Face::Mcp => "mcp",
            Face::Slack => "slack",
            Face::Mail => "mail",
            Face::Teams => "teams",
            Face::Agent => "agent",
            Face::Oidc => "oidc",
            Face::Telegram => "telegram",
        }
    }

    /// Parse a written face.
    pub fn parse(s: &str) -> Option<Face> {
        Self::ALL.iter().copied().find(|f| f.as_str() == s)
    }
}

/// A face and a name on it, written `FACE:NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// The face.
    pub face: Face,
    /// The name on that face.
    pub name: String,
}

impl Identity {
    /// `face:name`.
    pub fn new(face: Face, name: impl Into<String>) -> Identity {
        Identity {
            face,
            name: name.into(),
        }
    }

    /// Parse `FACE:NAME`; the reason when it is none.
    pub fn parse(s: &str) -> Result<Identity, String> {
        let faces = || {
            Face::ALL
                .iter()
                .map(|f| format!("{}:NAME", f.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (face, name) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?} is no identity: write FACE:NAME, one of {}", faces()))?;
        let face = Face::parse(face)
            .ok_or_else(|| format!("{s:?}: {face:?} is no face; the faces are {}", faces()))?;
        if name.trim().is_empty() || name.chars().any(char::is_control) {
            return Err(format!(
                "{s:?}: the name after the face is empty or holds control characters"
            ));
        }
        if face == Face::Slack && !crate::core::slack_users::is_user_id(name) {
            return Err(format!(
                "{s:?}: a Slack identity is a Slack user id (U or W, then capitals and digits, such as slack:U0123ABCD)"
            ));
        }
        if face == Face::Telegram && !crate::core::telegram_users::is_user_id(name) {
            return Err(format!(
                "{s:?}: a Telegram identity is a Telegram user id, digits only (such as telegram:123456789)"
            ));
        }
        if face == Face::Teams && !is_aad_object_id(name) {
            return Err(format!(
                "{s:?}: a Teams identity is the user's Entra ID object id, a GUID such as teams:6f1c2a4e-0d7b-4c2e-9a1e-3b5d7f9a1c2e"
            ));
        }
        Ok(Identity::new(face, name))
    }

    /// The identity a face authenticated, for an actor that is a person's: a provider, a
    /// web token, an MCP client, a Slack user, a mail recipient, an agent. `None` for the
    /// daemon, the CLI and an anonymous asker.
    pub fn of_actor(actor: &Actor) -> Option<Identity> {
        Some(match actor {
            Actor::Provider(n) => Identity::new(Face::Provider, n),
            Actor::Web(n) => Identity::new(Face::Web, n),
            Actor::Mcp(n) => Identity::new(Face::Mcp, n),
            Actor::Slack { user, .. } => Identity::new(Face::Slack, user),
            Actor::Mail(a) => Identity::new(Face::Mail, a),
            Actor::Agent(id) => Identity::new(Face::Agent, id),
            Actor::Oidc { subject, .. } => Identity::new(Face::Oidc, subject),
            Actor::Teams { user, .. } => Identity::new(Face::Teams, user),
            Actor::Telegram { user, .. } => Identity::new(Face::Telegram, user),
            Actor::Daemon | Actor::Cli | Actor::Asker => return None,
        })
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.face.as_str(), self.name)
    }
}

/// Whether `s` is an Entra ID (AAD) object id as Teams sends it: a GUID, 8-4-4-4-12 hex
/// digits.
pub fn is_aad_object_id(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Why a directory is refused (the config file names the key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeopleError {
    /// A person's name is not an id.
    #[error("{0:?} is not a person's name: letters, digits, '.', '_', '-' (1 to 128, starting with a letter or digit)")]
    BadPerson(String),
    /// An entry is no identity.
    #[error("{0}")]
    BadIdentity(String),
    /// One identity listed under two persons (or a Slack user mapped twice).
    #[error(
        "{identity} is listed for both {first:?} and {second:?}: an identity belongs to one person"
    )]
    Twice {
        /// The identity.
        identity: String,
        /// The first person.
        first: String,
        /// The second.
        second: String,
    },
}

/// The people directory: which person each listed identity belongs to, and the Slack
/// users (`[slack.users]` and the `slack:` identities of the directory) a Slack press is
/// admitted from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct People {
    /// Person → the identities the directory lists for them (in file order).
    persons: BTreeMap<String, Vec<Identity>>,
    /// Identity → person.
    by_identity: BTreeMap<Identity, String>,
    /// Slack user id → the person a press of theirs acts as.
    slack: BTreeMap<String, String>,
}

impl People {
    /// The directory of `persons` (person → identities as written) and the Slack users of
    /// `[slack.users]` (user id → reviewer name). A Slack user in both must name the same
    /// person.
    pub fn new(
        persons: Vec<(String, Vec<String>)>,
        slack_users: &BTreeMap<String, String>,
    ) -> Result<People, PeopleError> {
        let mut p = People::default();
        for (user, reviewer) in slack_users {
            p.slack.insert(user.clone(), reviewer.clone());
        }
        for (person, identities) in persons {
            if !crate::protocol::check::is_valid_id(&person) {
                return Err(PeopleError::BadPerson(person));
            }
            let mut listed = Vec::new();
            for written in identities {
                let id = Identity::parse(&written).map_err(PeopleError::BadIdentity)?;
                if let Some(first) = p.by_identity.get(&id) {
                    return Err(PeopleError::Twice {
                        identity: id.to_string(),
                        first: first.clone(),
                        second: person,
                    });
                }
                if id.face == Face::Slack {
                    match p.slack.get(&id.name) {
                        Some(other) if *other != person => {
                            return Err(PeopleError::Twice {
                                identity: id.to_string(),
                                first: format!("{other} (in [slack.users])"),
                                second: person,
                            })
                        }
                        _ => {
                            p.slack.insert(id.name.clone(), person.clone());
                        }
                    }
                }
                p.by_identity.insert(id.clone(), person.clone());
                listed.push(id);
            }
            p.persons.entry(person).or_default().extend(listed);
        }
        Ok(p)
    }

    /// Whether the directory lists nobody.
    pub fn is_empty(&self) -> bool {
        self.persons.is_empty()
    }

    /// Each person the directory lists, with their identities.
    pub fn persons(&self) -> impl Iterator<Item = (&str, &[Identity])> {
        self.persons
            .iter()
            .map(|(p, ids)| (p.as_str(), ids.as_slice()))
    }

    /// The Slack users a press is admitted from: user id → the person it acts as.
    pub fn slack_users(&self) -> &BTreeMap<String, String> {
        &self.slack
    }

    /// The person the directory lists `id` under, if it does.
    pub fn listed(&self, id: &Identity) -> Option<&str> {
        self.by_identity.get(id).map(String::as_str)
    }

    /// The person `id` belongs to: the directory's entry, else the name after the face
    /// (for a Slack user, the reviewer `[slack.users]` maps it to).
    pub fn person_of(&self, id: &Identity) -> String {
        if let Some(p) = self.by_identity.get(id) {
            return p.clone();
        }
        if id.face == Face::Slack {
            if let Some(p) = self.slack.get(&id.name) {
                return p.clone();
            }
        }
        id.name.clone()
    }

    /// The identity and person of an actor that is a person's (see [`Identity::of_actor`]).
    /// A Slack press acts as the reviewer its user is mapped to, which is its person; a
    /// provider's sign-in as the person it was decided to be.
    pub fn of_actor(&self, actor: &Actor) -> Option<(Identity, String)> {
        let id = Identity::of_actor(actor)?;
        let person = match actor {
            Actor::Slack {
                reviewer: person, ..
            }
            | Actor::Oidc { person, .. }
            | Actor::Telegram { person, .. }
            | Actor::Teams { person, .. } => self
                .by_identity
                .get(&id)
                .cloned()
                .unwrap_or_else(|| person.clone()),
            _ => self.person_of(&id),
        };
        Some((id, person))
    }

    /// The person a group member stands for: a bare name is a person; `FACE:NAME` is the
    /// person of that identity. `Err` with the reason for neither.
    pub fn member(&self, written: &str) -> Result<String, String> {
        if written.contains(':') {
            // A Slack member may be written with the reviewer's name (`slack:carol`), as
            // before persons: that name is the person.
            if let Some(name) = written.strip_prefix("slack:") {
                if !crate::core::slack_users::is_user_id(name)
                    && crate::protocol::check::is_valid_id(name)
                {
                    return Ok(name.to_string());
                }
            }
            return Identity::parse(written).map(|id| self.person_of(&id));
        }
        if crate::protocol::check::is_valid_id(written) {
            Ok(written.to_string())
        } else {
            Err(format!(
                "{written:?} is neither a person (a name: letters, digits, '.', '_', '-') nor an identity (FACE:NAME)"
            ))
        }
    }

    /// The persons of the asker of a request: of its agent id (`agent:ID`) and of the web
    /// token or MCP client its request came in under (`source`: `web:NAME`, `mcp:CLIENT`).
    /// `dshq ask` or an inbox file without an agent has none.
    pub fn askers(&self, agent_id: Option<&str>, source: &str) -> Vec<String> {
        use crate::core::audit::Source;
        let mut out = Vec::new();
        if let Some(a) = agent_id {
            out.push(self.person_of(&Identity::new(Face::Agent, a)));
        }
        match Source::parse(source) {
            Some(Source::WebToken(n)) => out.push(self.person_of(&Identity::new(Face::Web, n))),
            Some(Source::Mcp(n)) => out.push(self.person_of(&Identity::new(Face::Mcp, n))),
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(entries: &[(&str, &[&str])]) -> People {
        People::new(
            entries
                .iter()
                .map(|(p, ids)| (p.to_string(), ids.iter().map(|s| s.to_string()).collect()))
                .collect(),
            &BTreeMap::new(),
        )
        .unwrap()
    }

    #[test]
    fn every_face_round_trips() {
        for &f in Face::ALL {
            assert_eq!(Face::parse(f.as_str()), Some(f));
        }
        let id = Identity::parse("mail:alice@example.com").unwrap();
        assert_eq!(id.to_string(), "mail:alice@example.com");
        assert!(Identity::parse("alice").is_err());
        assert!(Identity::parse("root:alice").is_err());
        assert!(Identity::parse("web:").is_err());
        assert!(Identity::parse("slack:alice").is_err());
        assert!(Identity::parse("slack:U0123ABCD").is_ok());
        assert!(Identity::parse("telegram:123456789").is_ok());
        assert!(Identity::parse("telegram:alice").is_err());
        assert!(Identity::parse("telegram:-5").is_err());
    }

    #[test]
    fn without_a_directory_the_name_after_the_face_is_the_person() {
        let p = People::default();
        for a in [
            Actor::Provider("bob".into()),
            Actor::Web("bob".into()),
            Actor::Mcp("bob".into()),
            Actor::Slack {
                reviewer: "bob".into(),
                user: "U1".into(),
            },
        ] {
            assert_eq!(p.of_actor(&a).unwrap().1, "bob", "{a:?}");
        }
        assert_eq!(
            p.of_actor(&Actor::Mail("bob@example.com".into()))
                .unwrap()
                .1,
            "bob@example.com"
        );
        assert_eq!(p.of_actor(&Actor::Cli), None);
    }

    #[test]
    fn the_directory_links_names_that_differ() {
        let p = dir(&[(
            "alice",
            &[
                "mail:alice@example.com",
                "web:alice-laptop",
                "slack:U0123ABCD",
            ],
        )]);
        assert_eq!(
            p.of_actor(&Actor::Mail("alice@example.com".into()))
                .unwrap(),
            (
                Identity::new(Face::Mail, "alice@example.com"),
                "alice".into()
            )
        );
        assert_eq!(
            p.of_actor(&Actor::Web("alice-laptop".into())).unwrap().1,
            "alice"
        );
        assert_eq!(p.slack_users().get("U0123ABCD").unwrap(), "alice");
        // The asker's token, its agent: the directory applies to askers too.
        let p2 = dir(&[("carol", &["agent:build-bot"])]);
        assert_eq!(p2.askers(Some("build-bot"), "web:dave"), ["carol", "dave"]);
        assert_eq!(p2.askers(None, "cli"), Vec::<String>::new());
        // Members: persons, or identities standing for theirs (the old Slack form too).
        assert_eq!(p.member("alice").unwrap(), "alice");
        assert_eq!(p.member("mail:alice@example.com").unwrap(), "alice");
        assert_eq!(p.member("web:bob").unwrap(), "bob");
        assert_eq!(p.member("slack:carol").unwrap(), "carol");
        assert_eq!(p.member("slack:U0123ABCD").unwrap(), "alice");
        assert!(p.member("not a name").is_err());
    }

    #[test]
    fn an_identity_belongs_to_one_person() {
        let e = People::new(
            vec![
                ("alice".into(), vec!["web:shared".into()]),
                ("bob".into(), vec!["web:shared".into()]),
            ],
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(matches!(e, PeopleError::Twice { .. }), "{e}");
        let users = BTreeMap::from([("U1AAA".to_string(), "bob".to_string())]);
        let e =
            People::new(vec![("alice".into(), vec!["slack:U1AAA".into()])], &users).unwrap_err();
        assert!(e.to_string().contains("[slack.users]"), "{e}");
        assert!(matches!(
            People::new(vec![("no body".into(), vec![])], &BTreeMap::new()),
            Err(PeopleError::BadPerson(_))
        ));
    }
}
