//! Signing in through an identity provider: what the provider's claims decide. Pure.
//!
//! The page's OIDC sign-in ([`crate::web::page::sign_in`]) verifies an ID token and hands
//! its claims here. The operator's rules (`[[oidc.rule]]` in the config file) map a claim's
//! value (a group, a role, the mail address's domain) to a dshq role (reviewer or auditor),
//! optionally to the contexts that role reaches, and to the quorum groups (`[groups]`) a
//! reviewer joins: the store records those per person at each sign-in, and a quorum of such
//! a group admits them when they vote ([`crate::core::quorum`]). The person signing in is the OIDC
//! subject's person in the people directory (`oidc:SUBJECT`), else, when the operator
//! names a claim to take it from, the person that claim names.
//!
//! Why here, and why decided once at sign-in: every way of signing in must judge the same
//! claims by the same rules, and what was decided is recorded in the event log with the
//! claims it was decided from ([`Decision::record`]), so an audit can see why a person
//! could answer. A person no rule admits is refused; nothing is granted by default.
//!
//! Each way a sign-in is refused is a variant of [`Refused`], with its stable code: the
//! state or nonce of the flow, the token's issuer, audience, expiry, algorithm, key and
//! signature, the provider refusing the code (a replay), no rule admitting the claims, and
//! a return address that leaves the site.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};

use crate::core::access::Role;
use crate::core::people::{Face, Identity, People};
use crate::protocol::Code;

/// What the config file's `[oidc]` table says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The provider's issuer URL (discovery is at `/.well-known/openid-configuration`).
    pub issuer: String,
    /// This client's id at the provider (the ID token's audience).
    pub client_id: String,
    /// The file holding the client secret (0600).
    pub client_secret_file: std::path::PathBuf,
    /// Where the provider sends the browser back: the page's `/login/oidc/callback`.
    pub redirect_url: String,
    /// The scopes asked for (`openid` always among them).
    pub scopes: Vec<String>,
    /// Where the provider sends the browser after its logout; by default the page's
    /// `/login` beside the redirect URL.
    pub post_logout_url: Option<String>,
    /// The least time between two fetches of the key set for an unknown key id.
    pub jwks_refetch_after: Duration,
    /// Whether the API for machines takes the provider's access tokens (JWTs), and the
    /// audience they must hold; `None`: only dshq's own tokens.
    pub api_audience: Option<String>,
    /// What the claims decide.
    pub mapping: Mapping,
}

/// The audience the provider's access tokens must hold when `api-access-tokens` is on
/// and `api-audience` is not set.
pub const DEFAULT_API_AUDIENCE: &str = "dshq";

/// The scopes asked for when the file names none.
pub const DEFAULT_SCOPES: &[&str] = &["openid", "profile", "email"];

/// Whether a provider URL may be used: HTTPS, or plain HTTP to this machine's loopback.
pub fn check_url(what: &str, url: &str) -> std::result::Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{what} {url:?} is no URL: {e}"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if parsed.host_str().is_some_and(crate::net::is_loopback_host) => Ok(()),
        _ => Err(format!(
            "{what} {url:?} must be https (plain http only to this machine's loopback)"
        )),
    }
}

/// What a rule looks at (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::VariantArray)]
pub enum ClaimKind {
    /// One of the values of the groups claim (`groups-claim`, `groups` by default).
    Group,
    /// One of the values of the roles claim (`roles-claim`, `roles` by default).
    Role,
    /// The domain of the `email` claim, when the provider says it is verified.
    EmailDomain,
}

impl ClaimKind {
    /// Every kind.
    pub const ALL: &'static [ClaimKind] = <ClaimKind as strum::VariantArray>::VARIANTS;

    /// The key a rule writes it with (`group = "..."`).
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimKind::Group => "group",
            ClaimKind::Role => "role",
            ClaimKind::EmailDomain => "email-domain",
        }
    }

    /// Parse a rule's key.
    pub fn parse(s: &str) -> Option<ClaimKind> {
        Self::ALL.iter().copied().find(|k| k.as_str() == s)
    }
}

/// One rule: a claim's value, and what it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// What it looks at.
    pub kind: ClaimKind,
    /// The value that must be there (compared exactly; a domain without case).
    pub value: String,
    /// The role it grants (a reviewer or an auditor: the page has no askers); `None` for
    /// a rule that only puts a reviewer in quorum groups.
    pub role: Option<Role>,
    /// The contexts it reaches; `None`: every context.
    pub contexts: Option<Vec<String>>,
    /// The quorum groups (`[groups]`) it makes a reviewer a member of.
    pub quorum_groups: Vec<String>,
}

impl Rule {
    /// The rule as `config check` says it: `group = "deployers" grants reviewer in
    /// deploy, release; joins quorum group release`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} = {:?}", self.kind.as_str(), self.value);
        if let Some(role) = self.role {
            s.push_str(&format!(" grants {}", role.as_str()));
            if let Some(c) = &self.contexts {
                s.push_str(&format!(" in {}", c.join(", ")));
            }
        }
        if !self.quorum_groups.is_empty() {
            if self.role.is_some() {
                s.push(';');
            }
            s.push_str(&format!(
                " joins quorum group{} {}",
                if self.quorum_groups.len() == 1 {
                    ""
                } else {
                    "s"
                },
                self.quorum_groups.join(", ")
            ));
        }
        s
    }
}

/// The operator's rules and where the claims are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The rules, in file order.
    pub rules: Vec<Rule>,
    /// The claim holding the groups.
    pub groups_claim: String,
    /// The claim holding the roles.
    pub roles_claim: String,
    /// The claim a person is named by when the directory does not list the subject
    /// (`preferred_username`, `email`); `None`: only listed subjects may sign in.
    pub person_claim: Option<String>,
}

impl Default for Mapping {
    fn default() -> Self {
        Mapping {
            rules: Vec::new(),
            groups_claim: "groups".into(),
            roles_claim: "roles".into(),
            person_claim: None,
        }
    }
}

/// The claims of a verified ID token that the rules read (and the record keeps): never
/// the token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The issuer.
    pub issuer: String,
    /// The subject (`sub`).
    pub subject: String,
    /// The groups claim's values.
    pub groups: Vec<String>,
    /// The roles claim's values.
    pub roles: Vec<String>,
    /// The mail address, when verified (or when the provider does not say).
    pub email: Option<String>,
    /// The person claim's value, when the mapping names one and the token has it.
    pub person: Option<String>,
}

impl Claims {
    /// The claims the rules read, out of a token's whole claim set (`all`, a JSON object).
    pub fn read(mapping: &Mapping, issuer: &str, subject: &str, all: &Value) -> Claims {
        let strings = |name: &str| -> Vec<String> {
            match all.get(name) {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                Some(Value::String(s)) => vec![s.clone()],
                _ => Vec::new(),
            }
        };
        let verified = all.get("email_verified").and_then(Value::as_bool) != Some(false);
        let email = all
            .get("email")
            .and_then(Value::as_str)
            .filter(|_| verified)
            .map(str::to_string);
        let person = mapping
            .person_claim
            .as_deref()
            .and_then(|c| all.get(c))
            .and_then(Value::as_str)
            .map(str::to_string);
        Claims {
            issuer: issuer.to_string(),
            subject: subject.to_string(),
            groups: strings(&mapping.groups_claim),
            roles: strings(&mapping.roles_claim),
            email,
            person,
        }
    }

    fn email_domain(&self) -> Option<&str> {
        self.email
            .as_deref()
            .and_then(|e| e.rsplit_once('@'))
            .map(|(_, d)| d)
    }

    fn has(&self, rule: &Rule) -> bool {
        match rule.kind {
            ClaimKind::Group => self.groups.contains(&rule.value),
            ClaimKind::Role => self.roles.contains(&rule.value),
            ClaimKind::EmailDomain => self
                .email_domain()
                .is_some_and(|d| d.eq_ignore_ascii_case(&rule.value)),
        }
    }
}

/// What the claims decided: who signed in and what they may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The person.
    pub person: String,
    /// The identity the face authenticated (`oidc:SUBJECT`).
    pub identity: Identity,
    /// The role: a reviewer when any reviewer rule matched, else an auditor.
    pub role: Role,
    /// The contexts the role reaches; `None`: every context.
    pub contexts: Option<BTreeSet<String>>,
    /// The rules that matched (their positions, from 1, in file order).
    pub rules: Vec<usize>,
    /// The quorum groups the matched rules make a reviewer a member of (none for an
    /// auditor): what the store records as the person's groups by sign-in
    /// ([`crate::store::queue::sign_in`]), replacing those of their last sign-in.
    pub quorum_groups: BTreeSet<String>,
}

/// How a person signed in (a closed set): what the `signed-in` event says in `via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Through the page's redirect to the provider (an ID token).
    Page,
    /// With the provider's access token on the API for machines (its first use).
    AccessToken,
}

impl Via {
    /// As recorded.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Page => "page",
            Via::AccessToken => "access-token",
        }
    }
}

impl Decision {
    /// The event's data: how they signed in, the claims read and what they decided (no
    /// token).
    pub fn record(&self, claims: &Claims, via: Via) -> Value {
        json!({
            "via": via.as_str(),
            "issuer": claims.issuer,
            "subject": claims.subject,
            "person": self.person,
            "claims": {
                "groups": claims.groups,
                "roles": claims.roles,
                "email": claims.email,
            },
            "decided": {
                "role": self.role.as_str(),
                "contexts": self.contexts,
                "rules": self.rules,
                "quorumGroups": self.quorum_groups,
            }
        })
    }
}

/// Why a sign-in is refused (each with its stable code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The callback's state is missing, unknown (a flow this browser did not start, or one
    /// already finished) or not the flow's.
    #[error("this sign-in's state does not match the one this browser started (or it finished already): sign in again")]
    State,
    /// The ID token's nonce is not the flow's.
    #[error("the identity provider's token is for another sign-in (its nonce does not match): sign in again")]
    Nonce,
    /// The ID token's issuer is not the configured provider.
    #[error("the identity provider's token was issued by someone else ({0})")]
    Issuer(String),
    /// The ID token is not for this client.
    #[error("the identity provider's token is not meant for dshq ({0})")]
    Audience(String),
    /// The ID token has expired (or is not yet valid).
    #[error("the identity provider's token has expired ({0})")]
    Expired(String),
    /// The ID token is unsigned (`alg: none`) or signed with an algorithm not allowed.
    #[error(
        "the identity provider's token is unsigned or uses an algorithm dshq does not allow ({0})"
    )]
    Unsigned(String),
    /// The ID token names a key the provider does not publish (after a refresh).
    #[error("the identity provider's token is signed by a key the provider does not publish")]
    UnknownKey,
    /// The ID token's signature does not verify.
    #[error("the identity provider's token's signature does not verify ({0})")]
    BadSignature(String),
    /// The provider refused the authorization code (used already, expired, another
    /// client's, or the PKCE verifier does not match).
    #[error("the identity provider refused the sign-in's code ({0}): sign in again")]
    CodeRejected(String),
    /// The provider cannot be reached, or said something that is not OIDC.
    #[error("the identity provider cannot be used now: {0}")]
    Provider(String),
    /// No rule admits the claims, or no person can be named for the subject.
    #[error("{0}")]
    NotMapped(String),
    /// A return address that is not a path on this site.
    #[error("the address to return to after signing in must be a path on this site (such as /r/ID), not {0:?}")]
    BadReturn(String),
}

impl Refused {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            Refused::State => Code::OidcState,
            Refused::Nonce => Code::OidcNonce,
            Refused::Issuer(_) => Code::OidcIssuer,
            Refused::Audience(_) => Code::OidcAudience,
            Refused::Expired(_) => Code::OidcExpired,
            Refused::Unsigned(_) => Code::OidcUnsigned,
            Refused::UnknownKey => Code::OidcUnknownKey,
            Refused::BadSignature(_) => Code::OidcBadSignature,
            Refused::CodeRejected(_) => Code::OidcCodeRejected,
            Refused::Provider(_) => Code::OidcProvider,
            Refused::NotMapped(_) => Code::OidcNotMapped,
            Refused::BadReturn(_) => Code::BadReturnUrl,
        }
    }
}

impl Mapping {
    /// What `claims` decide, with the people directory naming the person.
    pub fn decide(&self, claims: &Claims, people: &People) -> Result<Decision, Refused> {
        let identity = Identity::new(Face::Oidc, claims.subject.clone());
        let person = match people.listed(&identity) {
            Some(p) => p.to_string(),
            None => match (&self.person_claim, &claims.person) {
                (Some(_), Some(p)) if crate::protocol::syntax::is_valid_id(p) => p.clone(),
                (Some(c), _) => {
                    return Err(Refused::NotMapped(format!(
                        "the directory lists no person for {identity}, and the token's {c:?} claim names none (a name: letters, digits, '.', '_', '-')"
                    )))
                }
                (None, _) => {
                    return Err(Refused::NotMapped(format!(
                        "the directory ([people]) lists no person for {identity}: ask the operator to add it"
                    )))
                }
            },
        };
        let matched: Vec<(usize, &Rule)> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| claims.has(r))
            .map(|(i, r)| (i + 1, r))
            .collect();
        let role = if matched.iter().any(|(_, r)| r.role == Some(Role::Reviewer)) {
            Role::Reviewer
        } else if matched.iter().any(|(_, r)| r.role == Some(Role::Auditor)) {
            Role::Auditor
        } else {
            return Err(Refused::NotMapped(format!(
                "{person} signed in, but no rule of the operator's ([[oidc.rule]]) admits their groups, roles or mail domain"
            )));
        };
        let granting: Vec<&(usize, &Rule)> = matched
            .iter()
            .filter(|(_, r)| r.role == Some(role))
            .collect();
        let contexts = if granting.iter().any(|(_, r)| r.contexts.is_none()) {
            None
        } else {
            Some(
                granting
                    .iter()
                    .flat_map(|(_, r)| r.contexts.iter().flatten().cloned())
                    .collect(),
            )
        };
        // Only a reviewer votes: an auditor's claims put them in no quorum group.
        let quorum_groups = match role {
            Role::Reviewer => matched
                .iter()
                .flat_map(|(_, r)| r.quorum_groups.iter().cloned())
                .collect(),
            _ => BTreeSet::new(),
        };
        let mut rules: Vec<usize> = granting.iter().map(|(i, _)| *i).collect();
        rules.extend(
            matched
                .iter()
                .filter(|(_, r)| r.role.is_none() && !quorum_groups.is_empty())
                .map(|(i, _)| *i),
        );
        rules.sort_unstable();
        Ok(Decision {
            person,
            identity,
            role,
            contexts,
            rules,
            quorum_groups,
        })
    }
}

/// Where to go after signing in: `next` when it is a path on this site (`/`, `/r/ID`,
/// `/history?context=ops`), refused otherwise. A scheme, a host (`//evil.example`,
/// `/\evil.example`, which browsers read as one), or a control character is refused.
pub fn return_path(next: &str) -> Result<String, Refused> {
    let bad = || Refused::BadReturn(crate::text::for_log(next).into_owned());
    let rest = next.strip_prefix('/').ok_or_else(bad)?;
    if rest.starts_with('/')
        || rest.starts_with('\\')
        || next.chars().any(|c| c.is_control() || c == '\\')
        || next.len() > 2048
    {
        return Err(bad());
    }
    Ok(next.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: ClaimKind, value: &str, role: Role, contexts: Option<&[&str]>) -> Rule {
        Rule {
            kind,
            value: value.into(),
            role: Some(role),
            contexts: contexts.map(|c| c.iter().map(|s| s.to_string()).collect()),
            quorum_groups: Vec::new(),
        }
    }

    fn claims(groups: &[&str], email: Option<&str>) -> Claims {
        Claims {
            issuer: "https://idp.example".into(),
            subject: "sub-1".into(),
            groups: groups.iter().map(|s| s.to_string()).collect(),
            roles: vec![],
            email: email.map(str::to_string),
            person: Some("alice".into()),
        }
    }

    fn mapping() -> Mapping {
        Mapping {
            rules: vec![
                rule(ClaimKind::Group, "dshq-reviewers", Role::Reviewer, None),
                rule(ClaimKind::Group, "dshq-auditors", Role::Auditor, None),
                rule(
                    ClaimKind::Group,
                    "deployers",
                    Role::Reviewer,
                    Some(&["deploy"]),
                ),
                rule(ClaimKind::EmailDomain, "example.com", Role::Auditor, None),
            ],
            person_claim: Some("preferred_username".into()),
            ..Mapping::default()
        }
    }

    #[test]
    fn groups_decide_the_role_and_the_contexts() {
        let p = People::default();
        let m = mapping();
        let d = m.decide(&claims(&["dshq-reviewers"], None), &p).unwrap();
        assert_eq!(
            (d.role, d.contexts.clone(), d.person.as_str()),
            (Role::Reviewer, None, "alice")
        );
        let d = m.decide(&claims(&["dshq-auditors"], None), &p).unwrap();
        assert_eq!(d.role, Role::Auditor);
        let d = m.decide(&claims(&["deployers"], None), &p).unwrap();
        assert_eq!(d.role, Role::Reviewer);
        assert_eq!(d.contexts, Some(BTreeSet::from(["deploy".to_string()])));
        // A reviewer rule wins over an auditor one; an unbound rule over a bound one.
        let d = m
            .decide(
                &claims(&["deployers", "dshq-auditors", "dshq-reviewers"], None),
                &p,
            )
            .unwrap();
        assert_eq!(
            (d.role, d.contexts, d.rules),
            (Role::Reviewer, None, vec![1, 3])
        );
        let d = m.decide(&claims(&[], Some("bob@Example.COM")), &p).unwrap();
        assert_eq!(d.role, Role::Auditor);
        let e = m
            .decide(&claims(&["others"], Some("eve@evil.example")), &p)
            .unwrap_err();
        assert_eq!(e.code(), Code::OidcNotMapped);
    }

    #[test]
    fn a_reviewers_rules_name_their_quorum_groups_an_auditors_none() {
        let p = People::default();
        let mut m = mapping();
        m.rules[0].quorum_groups = vec!["release".into()];
        m.rules.push(Rule {
            kind: ClaimKind::Group,
            value: "release-approvers".into(),
            role: None,
            contexts: None,
            quorum_groups: vec!["release".into(), "schema".into()],
        });
        let d = m
            .decide(&claims(&["deployers", "release-approvers"], None), &p)
            .unwrap();
        assert_eq!(d.role, Role::Reviewer);
        assert_eq!(d.contexts, Some(BTreeSet::from(["deploy".to_string()])));
        assert_eq!(
            d.quorum_groups,
            BTreeSet::from(["release".to_string(), "schema".to_string()])
        );
        assert_eq!(d.rules, vec![3, 5]);
        let d = m.decide(&claims(&["dshq-reviewers"], None), &p).unwrap();
        assert_eq!(d.quorum_groups, BTreeSet::from(["release".to_string()]));
        // A rule that grants no role admits nobody alone; an auditor joins no group.
        let e = m
            .decide(&claims(&["release-approvers"], None), &p)
            .unwrap_err();
        assert_eq!(e.code(), Code::OidcNotMapped);
        let d = m
            .decide(&claims(&["dshq-auditors", "release-approvers"], None), &p)
            .unwrap();
        assert_eq!((d.role, d.quorum_groups.len()), (Role::Auditor, 0));
        assert_eq!(
            m.rules[4].describe(),
            "group = \"release-approvers\" joins quorum groups release, schema"
        );
        assert_eq!(
            m.rules[2].describe(),
            "group = \"deployers\" grants reviewer in deploy"
        );
    }

    #[test]
    fn the_directory_names_the_person_else_the_claim_if_the_operator_says_so() {
        let people = People::new(
            vec![("alice".into(), vec!["oidc:sub-1".into()])],
            &Default::default(),
        )
        .unwrap();
        let mut c = claims(&["dshq-reviewers"], None);
        c.person = Some("someone-else".into());
        let mut m = mapping();
        assert_eq!(m.decide(&c, &people).unwrap().person, "alice");
        assert_eq!(
            m.decide(&c, &People::default()).unwrap().person,
            "someone-else"
        );
        c.person = Some("not a name".into());
        assert!(m.decide(&c, &People::default()).is_err());
        m.person_claim = None;
        c.person = Some("bob".into());
        assert_eq!(
            m.decide(&c, &People::default()).unwrap_err().code(),
            Code::OidcNotMapped
        );
    }

    #[test]
    fn only_a_path_on_this_site_is_returned_to() {
        for ok in ["/", "/r/abc", "/history?context=ops&x=1", "/r/a%2Fb"] {
            assert_eq!(return_path(ok).unwrap(), ok);
        }
        for bad in [
            "https://evil.example/",
            "//evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "evil.example",
            "",
            "javascript:alert(1)",
            "/\r\nSet-Cookie:x=1",
            "/%0d%0a\u{7}",
        ] {
            assert_eq!(
                return_path(bad).unwrap_err().code(),
                Code::BadReturnUrl,
                "{bad:?}"
            );
        }
    }
}
