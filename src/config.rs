//! The config file: TOML at `$XDG_CONFIG_HOME/dshq/config.toml` (or `--config FILE`,
//! `DSHQ_CONFIG`), holding every host setting (`root`, `store`, `log-format`, at the top)
//! and every daemon setting (its flags, in `[daemon]`), each under its flag's long name.
//!
//! Why the keys are the command line's own: one definition of each setting (its clap
//! argument: name, help, default, value parser) serves the flag, its `DSHQ_*` variable and
//! the file's key, so a new flag is a new key with nothing else to write, `config check`
//! judges a value with the very parser the flag uses, and `config default` prints the
//! flags' own help. The file's values become the arguments' defaults ([`apply`]); clap's
//! order then gives flag over variable over file over the built-in default.
//!
//! The daemon's flags get their variables here ([`with_env`]): `--batch-bytes` is
//! `DSHQ_BATCH_BYTES`, and so on.

use std::path::{Path, PathBuf};

use clap::Command;

use crate::error::{Error, Result};

/// The table of the daemon's settings.
pub const DAEMON: &str = "daemon";

/// The host settings at the top of the file (global flags of every command).
pub const GLOBAL_KEYS: &[&str] = &["root", "store", "log-format"];

/// One setting of a file: `[table] key = value`, at `line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// `None` at the top, `Some("daemon")` in `[daemon]`.
    pub table: Option<String>,
    /// The key (a flag's long name).
    pub key: String,
    /// The value as the flag would get it.
    pub value: String,
    /// Its line (1-based).
    pub line: usize,
    /// Whether it is one element of a TOML array (a flag given several times: each
    /// element one occurrence).
    pub list: bool,
}

/// A parsed config file.
#[derive(Debug, Clone)]
pub struct File {
    /// Where it was read.
    pub path: PathBuf,
    /// Its settings, in file order.
    pub settings: Vec<Setting>,
    /// The quorum policy of its `[groups]` and `[quorum.CONTEXT]` tables, with
    /// the people directory of its `[people]` table.
    pub quorum: crate::core::quorum::Policy,
    /// The Slack users a press is admitted from: Slack user id → the dshq
    /// reviewer (person) a press of that user answers as, from `[slack.users]` and the
    /// `slack:` identities of `[people]`. A Slack user named in neither is refused.
    pub slack_users: std::collections::BTreeMap<String, String>,
    /// The identity provider the page signs people in through (`[oidc]`), if any.
    pub oidc: Option<crate::core::sign_in::Settings>,
    /// The Microsoft Teams channel (`[teams]`), if any.
    pub teams: Option<crate::core::teams::Settings>,
    /// The Telegram channel (`[telegram]`), if the file sets it.
    pub telegram: Option<crate::core::telegram::Settings>,
    /// Every entry of the tables beyond the settings (`[groups]`, `[quorum.CONTEXT]`,
    /// `[people]`, `[slack.users]`), in file order, for `config show`.
    pub tables: Vec<Setting>,
}

/// The people directory's table (`alice = ["web:alice", "mail:alice@example.com"]`).
pub const PEOPLE: &str = "people";

/// The table of named reviewer groups (`name = ["web:alice", "provider:bob"]`).
pub const GROUPS: &str = "groups";

/// The table of the quorum each context requires (`[quorum.CONTEXT]`: `approvals`,
/// `group`, `decline`).
pub const QUORUM: &str = "quorum";

/// The Slack channel's table: `[slack.users]`, `SLACKUSERID = "reviewer"`.
pub const SLACK: &str = "slack";

/// The Microsoft Teams channel's table (`[teams]`, with `[teams.conversations]`).
pub const TEAMS: &str = "teams";

/// The identity provider's table (`[oidc]`, with its `[[oidc.rule]]` claim rules).
pub const OIDC: &str = "oidc";

/// The keys of `[oidc]` (besides its rules, `[[oidc.rule]]`), with what each holds, for
/// the default file and the errors.
pub const OIDC_KEYS: &[(&str, &str)] = &[
    ("issuer", "the provider's issuer URL (https; plain http only on loopback)"),
    ("client-id", "dshq's client id at the provider (the ID token's audience)"),
    ("client-secret-file", "a file (mode 0600) holding the client secret"),
    ("redirect-url", "the page's callback, as registered at the provider: https://HOST/login/oidc/callback"),
    ("scopes", "the scopes asked for (default [\"openid\", \"profile\", \"email\"]); add the one that releases groups"),
    ("groups-claim", "the claim holding the groups (default \"groups\")"),
    ("roles-claim", "the claim holding the roles (default \"roles\")"),
    ("person-claim", "the claim naming the person when [people] lists no oidc:SUBJECT for them (e.g. \"preferred_username\"); unset: only listed subjects sign in"),
    ("post-logout-url", "where the provider's logout returns to (default: the page's /login)"),
    ("jwks-refetch-after", "the least time between two fetches of the provider's keys for an unknown key id (default 60s)"),
    ("api-access-tokens", "whether the API for machines also takes the provider's access tokens (JWTs signed by its keys), mapped by the same rules (default false)"),
    ("api-audience", "the audience those access tokens must hold (default \"dshq\")"),
];

/// The `[oidc]` table `t`: the settings, or (the line's offset, the key, why not).
fn oidc_table(
    t: &toml::de::DeTable<'_>,
) -> std::result::Result<crate::core::sign_in::Settings, (usize, String, String)> {
    use crate::core::sign_in::{Mapping, Settings};
    use toml::de::DeValue;
    let mut s = Settings {
        issuer: String::new(),
        client_id: String::new(),
        client_secret_file: Default::default(),
        redirect_url: String::new(),
        scopes: crate::core::sign_in::DEFAULT_SCOPES
            .iter()
            .map(|s| s.to_string())
            .collect(),
        post_logout_url: None,
        jwks_refetch_after: std::time::Duration::from_secs(60),
        api_audience: None,
        mapping: Mapping::default(),
    };
    let mut api_tokens = false;
    let mut api_audience: Option<String> = None;
    let mut seen = Vec::new();
    for (k, v) in t.iter() {
        let key = k.get_ref().to_string();
        let at = k.span().start;
        let name = format!("{OIDC}.{key}");
        let fail = |why: String| (at, name.clone(), why);
        let string = || match v.get_ref() {
            DeValue::String(x) if !x.trim().is_empty() => Ok(x.to_string()),
            _ => Err(fail(format!("{name} is a string"))),
        };
        let strings = || match v.get_ref() {
            DeValue::Array(items) => items
                .iter()
                .map(|i| match i.get_ref() {
                    DeValue::String(x) if !x.trim().is_empty() => Ok(x.to_string()),
                    _ => Err(fail(format!("{name} is a list of strings"))),
                })
                .collect::<std::result::Result<Vec<_>, _>>(),
            _ => Err(fail(format!("{name} is a list of strings"))),
        };
        match key.as_str() {
            "issuer" => {
                s.issuer = string()?;
                crate::core::sign_in::check_url("issuer", &s.issuer).map_err(fail)?;
            }
            "client-id" => s.client_id = string()?,
            "client-secret-file" => s.client_secret_file = string()?.into(),
            "redirect-url" => {
                s.redirect_url = string()?;
                crate::core::sign_in::check_url("redirect-url", &s.redirect_url).map_err(fail)?;
            }
            "scopes" => {
                s.scopes = strings()?;
                if !s.scopes.iter().any(|x| x == "openid") {
                    return Err(fail("scopes must include \"openid\"".into()));
                }
            }
            "groups-claim" => s.mapping.groups_claim = string()?,
            "roles-claim" => s.mapping.roles_claim = string()?,
            "person-claim" => s.mapping.person_claim = Some(string()?),
            "post-logout-url" => {
                let u = string()?;
                crate::core::sign_in::check_url("post-logout-url", &u).map_err(fail)?;
                s.post_logout_url = Some(u);
            }
            "jwks-refetch-after" => {
                s.jwks_refetch_after = humantime::parse_duration(&string()?)
                    .map_err(|e| fail(format!("{name}: {e} (such as \"60s\")")))?;
            }
            "api-access-tokens" => match v.get_ref() {
                DeValue::Boolean(b) => api_tokens = *b,
                _ => return Err(fail(format!("{name} is true or false"))),
            },
            "api-audience" => api_audience = Some(string()?),
            "rule" => {
                let DeValue::Array(rules) = v.get_ref() else {
                    return Err(fail("write each rule as [[oidc.rule]]".into()));
                };
                for r in rules.iter() {
                    let at = r.span().start;
                    let DeValue::Table(r) = r.get_ref() else {
                        return Err((at, name.clone(), "write each rule as [[oidc.rule]]".into()));
                    };
                    s.mapping
                        .rules
                        .push(oidc_rule(r).map_err(|why| (at, format!("{OIDC}.rule"), why))?);
                }
            }
            _ => {
                let keys: Vec<&str> = OIDC_KEYS.iter().map(|(k, _)| *k).collect();
                return Err(fail(format!(
                    "unknown key {name:?}: [{OIDC}] takes {}, and its rules as [[{OIDC}.rule]]",
                    keys.join(", ")
                )));
            }
        }
        seen.push(key);
    }
    for required in ["issuer", "client-id", "client-secret-file", "redirect-url"] {
        if !seen.iter().any(|k| k == required) {
            return Err((0, OIDC.to_string(), format!("[{OIDC}] needs {required}")));
        }
    }
    if api_tokens {
        s.api_audience =
            Some(api_audience.unwrap_or_else(|| crate::core::sign_in::DEFAULT_API_AUDIENCE.into()));
    } else if api_audience.is_some() {
        return Err((
            0,
            format!("{OIDC}.api-audience"),
            "api-audience goes with api-access-tokens = true".into(),
        ));
    }
    if s.mapping.rules.is_empty() {
        return Err((
            0,
            OIDC.to_string(),
            format!("[{OIDC}] needs at least one [[{OIDC}.rule]]: nobody could sign in"),
        ));
    }
    Ok(s)
}

/// One `[[oidc.rule]]`: the claim it looks at (one of `group`, `role`, `email-domain`),
/// what it grants, where, and the quorum groups a reviewer it matches joins.
fn oidc_rule(t: &toml::de::DeTable<'_>) -> std::result::Result<crate::core::sign_in::Rule, String> {
    use crate::core::access::Role;
    use crate::core::sign_in::{ClaimKind, Rule};
    use toml::de::DeValue;
    let kinds: Vec<&str> = ClaimKind::ALL.iter().map(|k| k.as_str()).collect();
    let mut matched: Option<(ClaimKind, String)> = None;
    let mut grant: Option<Role> = None;
    let mut contexts: Option<Vec<String>> = None;
    let mut quorum_groups: Vec<String> = Vec::new();
    let names = |items: &toml::de::DeArray<'_>, what: &str| {
        let mut out = Vec::new();
        for i in items.iter() {
            let DeValue::String(c) = i.get_ref() else {
                return Err(format!("{what}s is a list of {what} names"));
            };
            crate::protocol::syntax::check_id(what, c).map_err(|e| e.message)?;
            out.push(c.to_string());
        }
        Ok(out)
    };
    for (k, v) in t.iter() {
        let key = k.get_ref().as_ref();
        match (key, v.get_ref()) {
            ("grant", DeValue::String(r)) => {
                grant = match Role::parse(r) {
                    Some(r @ (Role::Reviewer | Role::Auditor)) => Some(r),
                    _ => return Err(format!("grant is \"reviewer\" or \"auditor\", not {r:?}")),
                }
            }
            ("contexts", DeValue::Array(items)) if items.is_empty() => {
                return Err("contexts names at least one context (leave it out for every context)".into())
            }
            ("contexts", DeValue::Array(items)) => contexts = Some(names(items, "context")?),
            ("quorum-groups", DeValue::Array(items)) => {
                quorum_groups = names(items, "group")
                    .map_err(|e| e.replace("groups is", "quorum-groups is"))?;
            }
            (key, DeValue::String(value)) if ClaimKind::parse(key).is_some() => {
                if matched.is_some() {
                    return Err(format!("a rule looks at one claim: one of {}", kinds.join(", ")));
                }
                matched = Some((ClaimKind::parse(key).expect("checked"), value.to_string()));
            }
            (key, _) => {
                return Err(format!(
                    "{key:?} is not a rule key, or has the wrong type: one of {} (a string), grant (\"reviewer\" or \"auditor\"), contexts (a list), quorum-groups (a list)",
                    kinds.join(", ")
                ))
            }
        }
    }
    let (kind, value) =
        matched.ok_or_else(|| format!("a rule needs one of {} (a string)", kinds.join(", ")))?;
    match (grant, quorum_groups.is_empty()) {
        (None, true) => {
            return Err("a rule needs grant = \"reviewer\" or \"auditor\", or quorum-groups".into())
        }
        (Some(Role::Auditor), false) => {
            return Err("an auditor votes in no quorum: quorum-groups goes with grant = \"reviewer\" (or no grant)".into())
        }
        (None, false) if contexts.is_some() => {
            return Err("contexts goes with a grant: a rule with quorum-groups only grants no role".into())
        }
        _ => {}
    }
    Ok(Rule {
        kind,
        value,
        role: grant,
        contexts,
        quorum_groups,
    })
}

/// The default path: `$XDG_CONFIG_HOME/dshq/config.toml`, else `~/.config/dshq/config.toml`.
pub fn default_path() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(x).join("dshq/config.toml"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".config/dshq/config.toml"))
}

/// The file a run reads: `explicit` (which must exist), else the default path when a file
/// is there.
pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
    match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => default_path().filter(|p| p.exists()),
    }
}

fn config_error(path: &Path, line: usize, key: &str, message: impl Into<String>) -> Error {
    Error::Config {
        path: path.to_path_buf(),
        line,
        key: key.to_string(),
        message: message.into(),
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Read and parse `path` (TOML, scalar values, tables only where settings have them).
/// Whether the keys exist and the values parse is [`check`]'s.
///
/// A file holding a password (any setting whose value is a URL with one: `store`, a
/// `webhook`'s URL) is a secret file: refused with `UNSAFE_ROOT` when group or others may
/// read it ([`crate::disk::secret::judge_readers`], the key files' rule), so that `config
/// check` does not say "ok" of a password anyone on the machine can read, and no command
/// uses one.
pub fn load(path: &Path) -> Result<File> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = f.metadata().map_err(|e| Error::io(path, e))?;
    let mut text = String::new();
    f.read_to_string(&mut text)
        .map_err(|e| Error::io(path, e))?;
    let file = parse(path, &text)?;
    if let Some(s) = file.settings.iter().find(|s| redact(&s.value) != s.value) {
        let key = match &s.table {
            Some(t) => format!("{t}.{}", s.key),
            None => s.key.clone(),
        };
        let what = format!("password in the URL of `{key}` (line {})", s.line);
        crate::disk::secret::judge_readers(path, &what, &meta)?;
    }
    Ok(file)
}

/// Parse the text of a config file read from `path`.
pub fn parse(path: &Path, text: &str) -> Result<File> {
    use toml::de::{DeTable, DeValue};
    let top = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        config_error(path, line, "", format!("not TOML: {}", e.message()))
    })?;
    let mut settings = Vec::new();
    let mut tables: Vec<Setting> = Vec::new();
    let mut quorum = crate::core::quorum::Policy::default();
    let mut slack_users = std::collections::BTreeMap::new();
    let mut persons: Vec<(String, Vec<String>)> = Vec::new();
    let mut member_lines: Vec<(String, usize)> = Vec::new();
    let mut oidc = None;
    let mut teams = None;
    let mut telegram = None;
    // A table entry as written, for `config show`.
    let entry = |tables: &mut Vec<Setting>,
                 table: &str,
                 key: &str,
                 v: &toml::Spanned<DeValue>,
                 line: usize| {
        let span = v.span();
        tables.push(Setting {
            table: Some(table.to_string()),
            key: key.to_string(),
            value: text
                .get(span.start..span.end)
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            line,
            list: false,
        });
    };
    let scalar = |key: &str, v: &toml::Spanned<DeValue>| -> Result<String> {
        let line = line_of(text, v.span().start);
        Ok(match v.get_ref() {
            DeValue::String(s) => s.to_string(),
            DeValue::Integer(i) if i.radix() == 10 => i.as_str().replace('_', ""),
            DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
                .map(|n| n.to_string())
                .map_err(|_| config_error(path, line, key, "the number is out of range"))?,
            DeValue::Float(f) => f.to_string(),
            DeValue::Boolean(b) => b.to_string(),
            _ => {
                return Err(config_error(
                    path,
                    line,
                    key,
                    "give a string, a number or a boolean",
                ))
            }
        })
    };
    for (k, v) in top.get_ref().iter() {
        let key = k.get_ref().to_string();
        let line = line_of(text, k.span().start);
        match v.get_ref() {
            DeValue::Table(t) if key == DAEMON => {
                for (k2, v2) in t.iter() {
                    let key2 = k2.get_ref().to_string();
                    let name = format!("{DAEMON}.{key2}");
                    // A list is the flag given once per element ([`check`] allows it only
                    // for a flag that may be repeated).
                    let (values, list) = match v2.get_ref() {
                        DeValue::Array(items) => (items.iter().collect::<Vec<_>>(), true),
                        _ => (vec![v2], false),
                    };
                    for v in values {
                        settings.push(Setting {
                            table: Some(DAEMON.to_string()),
                            key: key2.clone(),
                            value: scalar(&name, v)?,
                            line: line_of(text, v.span().start),
                            list,
                        });
                    }
                }
            }
            DeValue::Table(t) if key == GROUPS => {
                for (k2, v2) in t.iter() {
                    let name = k2.get_ref().to_string();
                    let at = line_of(text, k2.span().start);
                    let key2 = format!("{GROUPS}.{name}");
                    crate::protocol::check::check_id("group", &name)
                        .map_err(|e| config_error(path, at, &key2, e.message))?;
                    let DeValue::Array(items) = v2.get_ref() else {
                        return Err(config_error(path, at, &key2, "give a list of persons or reviewer identities, e.g. [\"alice\", \"web:bob\", \"mail:carol@example.com\"]"));
                    };
                    let mut members = Vec::new();
                    for item in items.iter() {
                        let DeValue::String(m) = item.get_ref() else {
                            return Err(config_error(path, at, &key2, "a member is a string"));
                        };
                        members.push(m.to_string());
                    }
                    entry(&mut tables, GROUPS, &name, v2, at);
                    member_lines.push((name.clone(), at));
                    quorum.groups.insert(name, members);
                }
            }
            DeValue::Table(t) if key == QUORUM => {
                for (k2, v2) in t.iter() {
                    let context = k2.get_ref().to_string();
                    let at = line_of(text, k2.span().start);
                    let key2 = format!("{QUORUM}.{context}");
                    crate::protocol::check::check_id("context", &context)
                        .map_err(|e| config_error(path, at, &key2, e.message))?;
                    let DeValue::Table(q) = v2.get_ref() else {
                        return Err(config_error(path, at, &key2, format!("give a table: [{key2}] with approvals, group, decline")));
                    };
                    let q = context_quorum(q).map_err(|why| config_error(path, at, &key2, why))?;
                    // As an inline table (the file may write it as a table of its own).
                    let mut inline = vec![format!("approvals = {}", q.approvals)];
                    if let Some(g) = &q.group {
                        inline.push(format!("group = {}", toml_string(g)));
                    }
                    if let Some(d) = q.decline {
                        inline.push(format!("decline = {}", toml_string(d.as_str())));
                    }
                    tables.push(Setting {
                        table: Some(QUORUM.to_string()),
                        key: context.clone(),
                        value: format!("{{ {} }}", inline.join(", ")),
                        line: at,
                        list: false,
                    });
                    quorum.contexts.insert(context, q);
                }
            }
            DeValue::Table(t) if key == SLACK => {
                slack_users = crate::core::slack_users::parse_table(t).map_err(|(at, key2, why)| {
                    config_error(path, line_of(text, at), &key2, why)
                })?;
                if let Some(DeValue::Table(u)) = t.get("users").map(|v| v.get_ref()) {
                    for (k2, v2) in u.iter() {
                        let at = line_of(text, k2.span().start);
                        entry(&mut tables, "slack.users", k2.get_ref(), v2, at);
                    }
                }
            }
            DeValue::Table(t) if key == PEOPLE => {
                for (k2, v2) in t.iter() {
                    let name = k2.get_ref().to_string();
                    let at = line_of(text, k2.span().start);
                    let key2 = format!("{PEOPLE}.{name}");
                    let DeValue::Array(items) = v2.get_ref() else {
                        return Err(config_error(path, at, &key2, "give a list of the person's identities, e.g. [\"web:alice-laptop\", \"mail:alice@example.com\", \"slack:U0123ABCD\"]"));
                    };
                    let mut ids = Vec::new();
                    for item in items.iter() {
                        let DeValue::String(m) = item.get_ref() else {
                            return Err(config_error(path, at, &key2, "an identity is a string: FACE:NAME"));
                        };
                        ids.push(m.to_string());
                    }
                    // Each entry alone first, so an error names its line.
                    crate::core::people::People::new(vec![(name.clone(), ids.clone())], &Default::default())
                        .map_err(|e| config_error(path, at, &key2, e.to_string()))?;
                    entry(&mut tables, PEOPLE, &name, v2, at);
                    persons.push((name, ids));
                }
            }
            DeValue::Table(t) if key == OIDC => {
                let settings = oidc_table(t).map_err(|(at, key2, why)| {
                    let at = if at == 0 { line } else { line_of(text, at) };
                    config_error(path, at, &key2, why)
                })?;
                for (k2, v2) in t.iter().filter(|(k2, _)| k2.get_ref() != "rule") {
                    entry(&mut tables, OIDC, k2.get_ref(), v2, line_of(text, k2.span().start));
                }
                // Each rule as an inline table, at the line of its `[[oidc.rule]]`.
                let mut headers = text
                    .match_indices("[[oidc.rule]]")
                    .map(|(at, _)| line_of(text, at));
                for r in &settings.mapping.rules {
                    let list = |xs: &[String]| {
                        let xs: Vec<String> = xs.iter().map(|x| toml_string(x)).collect();
                        format!("[{}]", xs.join(", "))
                    };
                    let mut inline =
                        vec![format!("{} = {}", r.kind.as_str(), toml_string(&r.value))];
                    if let Some(role) = r.role {
                        inline.push(format!("grant = {}", toml_string(role.as_str())));
                    }
                    if let Some(cs) = &r.contexts {
                        inline.push(format!("contexts = {}", list(cs)));
                    }
                    if !r.quorum_groups.is_empty() {
                        inline.push(format!("quorum-groups = {}", list(&r.quorum_groups)));
                    }
                    tables.push(Setting {
                        table: Some(OIDC.to_string()),
                        key: "rule".into(),
                        value: format!("{{ {} }}", inline.join(", ")),
                        line: headers.next().unwrap_or(line),
                        list: false,
                    });
                }
                oidc = Some(settings);
            }
            DeValue::Table(t) if key == crate::core::telegram::TABLE => {
                let settings = crate::core::telegram::parse_table(t).map_err(|(at, key2, why)| {
                    let at = if at == 0 { line } else { line_of(text, at) };
                    config_error(path, at, &key2, why)
                })?;
                for (k2, v2) in t.iter() {
                    let table = match (k2.get_ref().as_ref(), v2.get_ref()) {
                        ("chats", DeValue::Table(chats)) => {
                            for (c, ids) in chats.iter() {
                                let at = line_of(text, c.span().start);
                                entry(&mut tables, "telegram.chats", c.get_ref(), ids, at);
                            }
                            continue;
                        }
                        _ => crate::core::telegram::TABLE,
                    };
                    entry(&mut tables, table, k2.get_ref(), v2, line_of(text, k2.span().start));
                }
                telegram = Some(settings);
            }
            DeValue::Table(t) if key == TEAMS => {
                let settings = crate::core::teams::parse_table(t).map_err(|(at, key2, why)| {
                    let at = if at == 0 { line } else { line_of(text, at) };
                    config_error(path, at, &key2, why)
                })?;
                for (k2, v2) in t.iter() {
                    let at = line_of(text, k2.span().start);
                    match v2.get_ref() {
                        DeValue::Table(c) => {
                            for (k3, v3) in c.iter() {
                                let at = line_of(text, k3.span().start);
                                entry(&mut tables, "teams.conversations", k3.get_ref(), v3, at);
                            }
                        }
                        _ => entry(&mut tables, TEAMS, k2.get_ref(), v2, at),
                    }
                }
                teams = Some(settings);
            }
            DeValue::Table(_) => {
                return Err(config_error(
                    path,
                    line,
                    &key,
                    format!("unknown table [{key}]: the tables are [{DAEMON}], [{GROUPS}], [{QUORUM}.CONTEXT], [{PEOPLE}], [{SLACK}.users], [{OIDC}], [telegram] and [{TEAMS}]"),
                ))
            }
            _ => {
                let value = scalar(&key, v)?;
                settings.push(Setting {
                    table: None,
                    key,
                    value,
                    line,
                    list: false,
                });
            }
        }
    }
    settings.sort_by_key(|s| s.line);
    tables.sort_by_key(|s| s.line);
    // The directory as a whole: an identity listed twice (or a Slack user both here and
    // in [slack.users] under another name) is an error at the second listing.
    let people = crate::core::people::People::new(persons, &slack_users).map_err(|e| {
        let at = tables
            .iter()
            .filter(|t| t.table.as_deref() == Some(PEOPLE))
            .map(|t| t.line)
            .max()
            .unwrap_or(1);
        config_error(path, at, PEOPLE, e.to_string())
    })?;
    slack_users = people.slack_users().clone();
    for (group, at) in &member_lines {
        for m in &quorum.groups[group] {
            people
                .member(m)
                .map_err(|why| config_error(path, *at, &format!("{GROUPS}.{group}"), why))?;
        }
    }
    quorum.people = people;
    // The quorum groups a sign-in may put a reviewer in must be [groups] of this file
    // (an empty list is one): a misspelt name in a rule would otherwise admit nobody.
    if let Some(o) = &oidc {
        let rule_lines = tables
            .iter()
            .filter(|t| t.table.as_deref() == Some(OIDC) && t.key == "rule")
            .map(|t| t.line);
        for (r, at) in o.mapping.rules.iter().zip(rule_lines) {
            for g in &r.quorum_groups {
                if !quorum.groups.contains_key(g) {
                    return Err(config_error(
                        path,
                        at,
                        &format!("{OIDC}.rule"),
                        format!("quorum group {g:?} is not in [{GROUPS}]: add it there (`{g} = []` when only sign-ins fill it)"),
                    ));
                }
                quorum.sign_in_groups.insert(g.clone());
            }
        }
    }
    for (context, q) in &quorum.contexts {
        if let Some(g) = &q.group {
            // The same judgment an ask makes, once for the file.
            quorum.required(context, None).map_err(|e| {
                config_error(
                    path,
                    1,
                    &format!("{QUORUM}.{context}"),
                    format!("{e} (group {g:?})"),
                )
            })?;
        }
    }
    Ok(File {
        path: path.to_path_buf(),
        settings,
        quorum,
        slack_users,
        oidc,
        teams,
        telegram,
        tables,
    })
}

/// The quorum of one `[quorum.CONTEXT]` table.
fn context_quorum(
    t: &toml::de::DeTable<'_>,
) -> std::result::Result<crate::protocol::Quorum, String> {
    use crate::protocol::{DeclineRule, Quorum};
    use toml::de::DeValue;
    let mut q = Quorum {
        approvals: 0,
        group: None,
        decline: None,
    };
    for (k, v) in t.iter() {
        match (k.get_ref().as_ref(), v.get_ref()) {
            ("approvals", DeValue::Integer(i)) => {
                let n: u32 = i
                    .as_str()
                    .replace('_', "")
                    .parse()
                    .map_err(|_| "approvals is a whole number".to_string())?;
                q.approvals = n;
            }
            ("group", DeValue::String(g)) => q.group = Some(g.to_string()),
            ("decline", DeValue::String(d)) => {
                q.decline = Some(match d.as_ref() {
                    "veto" => DeclineRule::Veto,
                    "vote" => DeclineRule::Vote,
                    other => return Err(format!("decline is \"veto\" or \"vote\", not {other:?}")),
                })
            }
            (key, _) => {
                return Err(format!(
                    "{key:?} is not a quorum key, or has the wrong type: approvals (a number), group (a string), decline (\"veto\" or \"vote\")"
                ))
            }
        }
    }
    let max = crate::protocol::check::MAX_APPROVALS;
    if !(1..=max).contains(&q.approvals) {
        return Err(format!("approvals must be 1 to {max}"));
    }
    Ok(q)
}

/// The argument a setting stands for, in `cmd` (the whole command line): a global host
/// setting at the top, a daemon flag in `[daemon]`.
fn argument<'a>(cmd: &'a Command, s: &Setting) -> Option<(&'a Command, &'a clap::Arg)> {
    let (owner, allowed): (&Command, bool) = match s.table.as_deref() {
        None => (cmd, GLOBAL_KEYS.contains(&s.key.as_str())),
        Some(t) => (cmd.find_subcommand(t)?, true),
    };
    if !allowed {
        return None;
    }
    owner
        .get_arguments()
        .find(|a| a.get_long() == Some(s.key.as_str()) && a.get_id() != "help")
        .map(|a| (owner, a))
}

/// Every key of `file` must be a setting and every value must parse as its flag's would;
/// the first problem is the error (naming the key and its line).
pub fn check(cmd: &Command, file: &File) -> Result<()> {
    for s in &file.settings {
        let name = match &s.table {
            Some(t) => format!("{t}.{}", s.key),
            None => s.key.clone(),
        };
        let Some((owner, arg)) = argument(cmd, s) else {
            let hint = match s.table {
                None => format!(
                    "the keys at the top are {}; the daemon's go in [{DAEMON}]",
                    GLOBAL_KEYS.join(", ")
                ),
                Some(_) => "see `dshq config default` for every key".to_string(),
            };
            return Err(config_error(
                &file.path,
                s.line,
                &name,
                format!("unknown key {name:?}: {hint}"),
            ));
        };
        if s.list && !matches!(arg.get_action(), clap::ArgAction::Append) {
            return Err(config_error(
                &file.path,
                s.line,
                &name,
                format!("{name} takes one value, not a list"),
            ));
        }
        // The flag's own parser, alone in a command of its own (the real one's `requires`
        // and conflicts would judge other settings, not this value).
        let long = arg.get_long().unwrap_or_default().to_string();
        let mut alone = clap::Arg::new("value")
            .long(long.clone())
            .num_args(1)
            .allow_hyphen_values(true)
            .value_parser(arg.get_value_parser().clone());
        if let Some(names) = arg.get_value_names() {
            alone = alone.value_names(names.to_vec());
        }
        // A list flag's value holds several, as on the command line (`--webhook`,
        // `--email`).
        if let Some(d) = arg.get_value_delimiter() {
            alone = alone.value_delimiter(d);
        }
        let _ = owner;
        let parsed = Command::new("dshq")
            .no_binary_name(true)
            .arg(alone)
            .try_get_matches_from([format!("--{long}"), s.value.clone()]);
        if let Err(e) = parsed {
            let rendered = e.render().to_string();
            let why = rendered
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_string();
            return Err(config_error(
                &file.path,
                s.line,
                &name,
                format!("{name}: {why}"),
            ));
        }
    }
    Ok(())
}

/// The file's settings as the arguments' defaults (the file was [`check`]ed): a list's
/// elements together, as the flag repeated.
pub fn apply(mut cmd: Command, file: &File) -> Command {
    let mut done: Vec<(&Option<String>, &str)> = Vec::new();
    for s in &file.settings {
        if done.contains(&(&s.table, s.key.as_str())) {
            continue;
        }
        done.push((&s.table, s.key.as_str()));
        let Some(id) = argument(&cmd, s).map(|(_, a)| a.get_id().to_string()) else {
            continue;
        };
        let values: Vec<String> = file
            .settings
            .iter()
            .filter(|o| o.table == s.table && o.key == s.key)
            .map(|o| o.value.clone())
            .collect();
        cmd = match s.table.as_deref() {
            None => cmd.mut_arg(id, move |a| a.default_values(values)),
            Some(t) => {
                let t = t.to_string();
                cmd.mut_subcommand(t, move |sc| {
                    sc.mut_arg(id, move |a| a.default_values(values))
                })
            }
        };
    }
    cmd
}

/// The variable of a daemon flag: `DSHQ_` and its name in capitals (`--batch-bytes`:
/// `DSHQ_BATCH_BYTES`).
pub fn env_name(long: &str) -> String {
    format!("DSHQ_{}", long.replace('-', "_").to_ascii_uppercase())
}

/// Give every daemon flag its `DSHQ_*` variable (one that has none yet).
pub fn with_env(cmd: Command) -> Command {
    cmd.mut_subcommand(DAEMON, |mut sc| {
        let longs: Vec<(String, String)> = sc
            .get_arguments()
            .filter(|a| a.get_env().is_none() && a.get_id() != "help")
            .filter_map(|a| Some((a.get_id().to_string(), a.get_long()?.to_string())))
            .collect();
        for (id, long) in longs {
            let name = env_name(&long);
            sc = sc.mut_arg(id, move |a| a.env(name));
        }
        sc
    })
}

/// A setting's value as `config show` prints it: any URL in it without its password
/// (the store's, a webhook's `CONTEXT=URL`, ...).
pub fn redact(value: &str) -> String {
    crate::root::redact_url(value)
}

/// The commented default file (`dshq config default`): every key, its help, its variable
/// and its default, commented out.
pub fn default_file(cmd: &Command) -> String {
    let mut out = String::from(
        "# dshq's config file: $XDG_CONFIG_HOME/dshq/config.toml (~/.config/dshq/config.toml),\n\
         # or the file given with --config FILE or DSHQ_CONFIG. Every key is optional and takes\n\
         # the value its flag takes; a DSHQ_* variable overrides a key, and a flag overrides both.\n\
         # A flag that may be repeated takes a list, one element per occurrence (each channel's\n\
         # CONTEXT=TARGET: webhook = [\"ops=http://10.0.0.5/hook\", \"dev=http://10.0.0.6/hook\"]).\n\
         # Check a file with `dshq config check FILE`; see what applies with `dshq config show`.\n",
    );
    let entry = |out: &mut String, a: &clap::Arg| {
        let Some(long) = a.get_long() else { return };
        let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push('\n');
        for line in textwrap(&help, 88) {
            out.push_str(&format!("# {line}\n"));
        }
        if let Some(env) = a.get_env() {
            out.push_str(&format!("# (variable: {})\n", env.to_string_lossy()));
        }
        // A value that works as it is once the line is uncommented: the default, `false`
        // for a switch, else the example.
        let value = match a.get_default_values().first() {
            Some(d) => toml_string(&d.to_string_lossy()),
            None if matches!(a.get_action(), clap::ArgAction::SetTrue) => "false".into(),
            // A flag that may be repeated: a list, one element per occurrence.
            None if matches!(a.get_action(), clap::ArgAction::Append) => {
                format!("[{}]", toml_string(example(long).unwrap_or("VALUE")))
            }
            None => toml_string(example(long).unwrap_or("VALUE")),
        };
        out.push_str(&format!("# {long} = {value}\n"));
    };
    for key in GLOBAL_KEYS {
        if let Some(a) = cmd.get_arguments().find(|a| a.get_long() == Some(key)) {
            entry(&mut out, a);
        }
    }
    out.push_str(&format!("\n[{DAEMON}]\n"));
    if let Some(d) = cmd.find_subcommand(DAEMON) {
        for a in d.get_arguments().filter(|a| a.get_id() != "help") {
            entry(&mut out, a);
        }
    }
    out.push_str(TABLES);
    out.push_str(&oidc_default());
    out.push_str(&telegram_default());
    out.push_str(&teams_default());
    out
}

/// The commented `[teams]` table of the default file: each key with what it holds and an
/// example that `config check` takes (docs/guide/teams.md has the whole story).
fn teams_default() -> String {
    let mut out = format!(
        "\n# The Microsoft Teams channel, when this table is set: see docs/guide/teams.md. The\n\
         # app-id, app-password-file, service-url and the conversations are required.\n# [{TEAMS}]\n"
    );
    for (key, what) in crate::core::teams::KEYS {
        if *key == "conversations" {
            continue;
        }
        for line in textwrap(what, 86) {
            out.push_str(&format!("# {line}\n"));
        }
        let example = match *key {
            "app-id" => "\"00000000-0000-0000-0000-000000000000\"".to_string(),
            "app-password-file" => "\"/etc/dshq/teams-app-password\"".to_string(),
            "service-url" => "\"https://smba.trafficmanager.net/teams/\"".to_string(),
            "openid-metadata" => format!("{:?}", crate::core::teams::DEFAULT_OPENID_METADATA),
            "token-url" => format!("{:?}", crate::core::teams::DEFAULT_TOKEN_URL),
            "page-url" => "\"https://dshq.example.com\"".to_string(),
            _ => "\"10s\"".to_string(),
        };
        out.push_str(&format!("# {key} = {example}\n"));
    }
    out.push_str(&format!(
        "\n# Each context's Teams conversation (a channel's or a chat's id), where its cards go.\n\
         # [{TEAMS}.conversations]\n# default = \"19:0123456789abcdef@thread.tacv2\"\n"
    ));
    out
}

/// The commented `[telegram]` table of the default file: each key with what it holds and
/// an example that `config check` takes.
fn telegram_default() -> String {
    use crate::core::telegram::{KEYS, TABLE};
    let mut out = format!(
        "\n# The Telegram channel: each context's requests sent to its chats, answered with a button;\n\
         # see docs/guide/telegram.md. A presser is admitted when [people] lists their user id\n\
         # for a person (alice = [\"telegram:123456789\"]); anyone else is refused.\n# [{TABLE}]\n"
    );
    for (key, what) in KEYS {
        for line in textwrap(what, 86) {
            out.push_str(&format!("# {line}\n"));
        }
        let example = match *key {
            "bot-token-file" => "\"/etc/dshq/telegram.token\"",
            "secret-token-file" => "\"/etc/dshq/telegram-secret-token\"",
            "api-url" => "\"https://api.telegram.org\"",
            "page-url" => "\"https://dshq.example\"",
            "timeout" => "\"10s\"",
            _ => "\"\"",
        };
        out.push_str(&format!("# {key} = {example}\n"));
    }
    out.push_str(&format!(
        "\n# Each context and the chat it goes to (a group's id is negative), or a list of chats.\n\
         # [{TABLE}.chats]\n# default = -1001234567890\n"
    ));
    out
}

/// A value of `[oidc]`'s `key` that `config check` takes, for the default file (a
/// Keycloak-style provider; docs/guide/sign-in.md has the whole story).
fn oidc_example(key: &str) -> &'static str {
    match key {
        "issuer" => "\"https://id.example.com/realms/dshq\"",
        "client-id" => "\"dshq\"",
        "client-secret-file" => "\"/etc/dshq/oidc-client-secret\"",
        "redirect-url" => "\"https://dshq.example.com/login/oidc/callback\"",
        "scopes" => "[\"openid\", \"profile\", \"email\", \"groups\"]",
        "groups-claim" => "\"groups\"",
        "roles-claim" => "\"roles\"",
        "person-claim" => "\"preferred_username\"",
        "post-logout-url" => "\"https://dshq.example.com/login\"",
        "jwks-refetch-after" => "\"60s\"",
        "api-access-tokens" => "true",
        "api-audience" => "\"dshq\"",
        _ => "\"\"",
    }
}

/// The commented `[oidc]` table of the default file: each key with what it holds, and a
/// rule.
fn oidc_default() -> String {
    let mut out = format!(
        "\n# The page signs people in through an identity provider (OpenID Connect) when this\n\
         # table is set: see docs/guide/sign-in.md. The issuer, client-id, client-secret-file and\n\
         # redirect-url are required, and at least one rule.\n# [{OIDC}]\n"
    );
    for (key, what) in OIDC_KEYS {
        for line in textwrap(what, 86) {
            out.push_str(&format!("# {line}\n"));
        }
        out.push_str(&format!("# {key} = {}\n", oidc_example(key)));
    }
    out.push_str(&format!(
        "\n# Each rule: one of group, role or email-domain (a string), grant (\"reviewer\" or\n\
         # \"auditor\"), and optionally contexts (the contexts it reaches; default every one)\n\
         # and quorum-groups (the [groups] a reviewer it matches joins, such as [\"ops\"]).\n\
         # [[{OIDC}.rule]]\n# group = \"dshq-reviewers\"\n# grant = \"reviewer\"\n"
    ));
    out
}

/// The tables beyond the settings, as `config default` ends with them (commented, each
/// working as it is once uncommented).
const TABLES: &str = "
# The people directory: a person and the identities that are theirs, one reviewer whatever
# face they answer from (web:NAME, mail:ADDR, slack:SLACKUSERID, provider:NAME, cli:NAME).
# [people]
# alice = [\"web:alice\", \"mail:alice@example.com\", \"slack:U0123ABCD\"]

# Named groups of reviewers, for a quorum.
# [groups]
# ops = [\"alice\", \"web:bob\"]

# The quorum a context requires: approvals (a number), group, decline (\"veto\" or \"vote\").
# [quorum.default]
# approvals = 1
# group = \"ops\"
# decline = \"veto\"

# With --slack: the Slack users whose presses answer, each as a dshq reviewer (a person of
# [people], or a name); anyone else's press is refused.
# [slack.users]
# U0456EFGH = \"bob\"
";

/// An example value of a setting that has no default, as `config default` prints it: one
/// its flag takes.
fn example(long: &str) -> Option<&'static str> {
    Some(match long {
        "root" => "/var/lib/dshq",
        "store" => "postgresql://dshq@/dshq?host=/run/postgresql",
        "on-question" => "logger -t dshq",
        "listen" => "127.0.0.1:7465",
        "mcp-allow-origin" => "http://localhost:5173",
        "prune-after" => "90d",
        "prune-export-dir" => "/var/lib/dshq/pruned",
        "metrics" => "127.0.0.1:9464",
        "webhook" => "default=http://127.0.0.1:9000/hook",
        "webhook-secret-file" => "default=/etc/dshq/default.whsec",
        "slack" => "default=C0123ABCD",
        "slack-token-file" => "/etc/dshq/slack.token",
        "slack-signing-secret-file" => "/etc/dshq/slack-signing-secret",
        "slack-page-url" => "https://dshq.example",
        "email" => "default=alice@example.com",
        "smtp" => "smtps://mail.example.com",
        "smtp-user" => "dshq",
        "smtp-password-file" => "/etc/dshq/smtp.password",
        "smtp-ca-file" => "/etc/dshq/smtp-ca.pem",
        "email-from" => "dshq <dshq@example.com>",
        "email-page-url" => "https://dshq.example",
        "context-ladder" => "default:remindAfter=30m",
        "a2a-push-allow" => "http://127.0.0.1:9000",
        "push" => "default",
        "push-contact" => "mailto:ops@example.com",
        _ => return None,
    })
}

/// A TOML basic string.
pub fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn textwrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for para in text.lines() {
        let mut line = String::new();
        for word in para.split_whitespace() {
            if !line.is_empty() && line.len() + 1 + word.len() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_tables_are_read_with_their_positions() {
        let f = parse(
            Path::new("c.toml"),
            "root = \"/r\"\n\n[daemon]\ntick = \"2s\"\nbatch = 0x10\n",
        )
        .unwrap();
        let got: Vec<_> = f
            .settings
            .iter()
            .map(|s| (s.table.clone(), s.key.as_str(), s.value.as_str(), s.line))
            .collect();
        assert_eq!(
            got,
            vec![
                (None, "root", "/r", 1),
                (Some("daemon".into()), "tick", "2s", 4),
                (Some("daemon".into()), "batch", "16", 5),
            ]
        );
        let e = parse(Path::new("c.toml"), "[web]\nx = 1\n").unwrap_err();
        assert!(e.to_string().contains("unknown table [web]"), "{e}");
        let e = parse(Path::new("c.toml"), "a = [1]\n").unwrap_err();
        assert!(e.to_string().contains(":1:"), "{e}");
    }

    #[test]
    fn a_list_is_a_repeatable_flag_given_once_per_element() {
        let cmd = crate::cli::command();
        let f = parse(
            Path::new("c.toml"),
            "[daemon]\nwebhook = [\n  \"a=http://127.0.0.1:9/a\",\n  \"b=http://127.0.0.1:9/b\",\n]\n",
        )
        .unwrap();
        let got: Vec<_> = f
            .settings
            .iter()
            .map(|s| (s.value.as_str(), s.line, s.list))
            .collect();
        assert_eq!(
            got,
            [
                ("a=http://127.0.0.1:9/a", 3, true),
                ("b=http://127.0.0.1:9/b", 4, true)
            ]
        );
        check(&cmd, &f).unwrap();
        let m = apply(cmd.clone(), &f)
            .try_get_matches_from(["dshq", "daemon"])
            .unwrap();
        let (_, dm) = m.subcommand().unwrap();
        assert_eq!(dm.get_raw("webhook").unwrap().count(), 2);
        // A list where the flag takes one value, or an element in the old joined form.
        let f = parse(Path::new("c.toml"), "[daemon]\ntick = [\"1s\"]\n").unwrap();
        let e = check(&cmd, &f).unwrap_err().to_string();
        assert!(
            e.contains(":2:") && e.contains("takes one value, not a list"),
            "{e}"
        );
        let f = parse(
            Path::new("c.toml"),
            "[daemon]\nemail = [\"a=x@example.com;b=y@example.com\"]\n",
        )
        .unwrap();
        let e = check(&cmd, &f).unwrap_err().to_string();
        assert!(e.contains("repeat --email"), "{e}");
    }

    #[test]
    fn slack_users_and_slack_reviewers_in_groups_are_read() {
        let f = parse(
            Path::new("c.toml"),
            "[groups]\nops = [\"slack:alice\", \"web:bob\"]\n\n[slack.users]\nU0123ABCD = \"alice\"\n",
        )
        .unwrap();
        assert_eq!(
            f.slack_users.get("U0123ABCD").map(String::as_str),
            Some("alice")
        );
        assert_eq!(f.quorum.groups["ops"], ["slack:alice", "web:bob"]);
        let e = parse(Path::new("c.toml"), "[groups]\nops = [\"slack:\"]\n").unwrap_err();
        assert!(e.to_string().contains("the name after the face"), "{e}");
        let e = parse(Path::new("c.toml"), "\n[slack.users]\nalice = \"alice\"\n").unwrap_err();
        assert!(
            e.to_string().contains(":3:") && e.to_string().contains("Slack user id"),
            "{e}"
        );
    }
}
