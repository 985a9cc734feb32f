//! `dshq config default|check|show`: the config file ([`crate::config`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::parser::ValueSource;
use serde::Serialize;

use super::Ctx;
use crate::config::{self, DAEMON, GLOBAL_KEYS};
use crate::error::{Error, Result};
use crate::output::emit;

/// `dshq config ...`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print a commented config file with every setting at its default.
    Default,
    /// Check a config file (default: --config, or the default path): every key a
    /// setting, every value one its flag takes. Errors name the key and its line.
    Check {
        /// The file.
        file: Option<PathBuf>,
    },
    /// Print the settings `dshq daemon` would run with (config file, then DSHQ_*
    /// variables, then built-in defaults), each with where it came from; secrets redacted.
    Show,
}

/// What `config check` found.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    /// The file.
    pub file: String,
    /// Settings in it.
    pub settings: usize,
    /// The people directory: person → the identities listed for them (every other
    /// identity belongs to the person named after its face).
    pub people: BTreeMap<String, Vec<String>>,
    /// The reviewer groups, each member resolved to its person.
    pub groups: BTreeMap<String, Vec<String>>,
    /// The quorum each context requires.
    pub quorum: BTreeMap<String, crate::protocol::Quorum>,
    /// The Slack users a press is admitted from, and the person each acts as.
    pub slack_users: BTreeMap<String, String>,
    /// The identity provider the page signs people in through, and its rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc: Option<OidcChecked>,
    /// The Teams channel's conversations: context → conversation id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teams: Option<BTreeMap<String, String>>,
}

/// What `config check` says of `[oidc]`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OidcChecked {
    /// The issuer.
    pub issuer: String,
    /// dshq's client id there.
    pub client_id: String,
    /// Each rule as written: `group = "x" grants reviewer in deploy; joins quorum group y`.
    pub rules: Vec<String>,
    /// The audience the provider's access tokens must hold on the API, when it takes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_audience: Option<String>,
}

impl Checked {
    /// What a checked file holds.
    fn of(path: &std::path::Path, f: &config::File) -> Checked {
        let q = &f.quorum;
        Checked {
            file: path.display().to_string(),
            settings: f.settings.len(),
            people: q
                .people
                .persons()
                .map(|(p, ids)| (p.to_string(), ids.iter().map(|i| i.to_string()).collect()))
                .collect(),
            groups: q
                .groups
                .iter()
                .map(|(g, members)| {
                    let mut persons: Vec<String> = Vec::new();
                    for m in members {
                        let p = q.people.member(m).unwrap_or_else(|_| m.clone());
                        if !persons.contains(&p) {
                            persons.push(p);
                        }
                    }
                    (g.clone(), persons)
                })
                .collect(),
            quorum: q.contexts.clone(),
            slack_users: f.slack_users.clone(),
            teams: f.teams.as_ref().map(|t| t.conversations.clone()),
            oidc: f.oidc.as_ref().map(|o| OidcChecked {
                issuer: o.issuer.clone(),
                client_id: o.client_id.clone(),
                rules: o.mapping.rules.iter().map(|r| r.describe()).collect(),
                api_audience: o.api_audience.clone(),
            }),
        }
    }

    /// The report for people.
    fn text(&self) -> String {
        let n =
            |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        let mut s = format!(
            "{}: ok ({}, {}, {}, {}, {})\n",
            self.file,
            n(self.settings, "setting", "settings"),
            n(self.people.len(), "person", "people"),
            n(self.groups.len(), "group", "groups"),
            n(self.quorum.len(), "context quorum", "context quorums"),
            n(self.slack_users.len(), "Slack user", "Slack users"),
        );
        if !self.people.is_empty() {
            s.push_str("people (any other FACE:NAME is the person NAME):\n");
            for (p, ids) in &self.people {
                s.push_str(&format!(
                    "  {p}: {}\n",
                    crate::text::one_line(&ids.join(", "))
                ));
            }
        }
        if !self.groups.is_empty() {
            s.push_str("groups (as persons):\n");
            for (g, persons) in &self.groups {
                s.push_str(&format!(
                    "  {g}: {}\n",
                    crate::text::one_line(&persons.join(", "))
                ));
            }
        }
        if !self.quorum.is_empty() {
            s.push_str("quorum:\n");
            for (c, q) in &self.quorum {
                s.push_str(&format!(
                    "  {c}: {} approval(s){}, decline {}\n",
                    q.approvals,
                    q.group
                        .as_deref()
                        .map(|g| format!(" of group {g}"))
                        .unwrap_or_default(),
                    q.decline.unwrap_or_default().as_str()
                ));
            }
        }
        if !self.slack_users.is_empty() {
            s.push_str("slack users:\n");
            for (u, p) in &self.slack_users {
                s.push_str(&format!("  {u}: {p}\n"));
            }
        }
        if let Some(t) = &self.teams {
            s.push_str("teams conversations:\n");
            for (c, id) in t {
                s.push_str(&format!("  {c}: {}\n", crate::text::one_line(id)));
            }
        }
        if let Some(o) = &self.oidc {
            s.push_str(&format!(
                "oidc: {} as client {}\n",
                crate::text::one_line(&o.issuer),
                crate::text::one_line(&o.client_id)
            ));
            for r in &o.rules {
                s.push_str(&format!("  {}\n", crate::text::one_line(r)));
            }
        }
        s
    }
}

/// One effective setting.
#[derive(Debug, Serialize)]
pub struct Effective {
    /// `root`, or `daemon.tick`.
    pub key: String,
    /// The value (secrets redacted); none when unset.
    pub value: Option<String>,
    /// `flag`, `env DSHQ_…`, `file PATH:LINE`, `default` or `unset`.
    pub source: String,
    /// Whether the setting is a list (a flag that may be repeated): its value is then the
    /// TOML array of its values.
    #[serde(skip)]
    pub list: bool,
}

/// Run it (`explicit`: the global `--config`).
pub fn run(ctx: &Ctx, c: Command, explicit: Option<PathBuf>) -> Result<()> {
    match c {
        Command::Default => {
            print!("{}", config::default_file(&super::command()));
            Ok(())
        }
        Command::Check { file } => {
            let path = file
                .or_else(|| config::locate(explicit.as_deref()))
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "no config file to check: give FILE or --config, or create {}",
                        config::default_path()
                            .map(|p| p.display().to_string())
                            .unwrap_or_else(|| "$XDG_CONFIG_HOME/dshq/config.toml".into())
                    ))
                })?;
            let f = config::load(&path)?;
            config::check(&super::command(), &f)?;
            let report = Checked::of(&path, &f);
            emit(ctx.json, &report, || report.text());
            Ok(())
        }
        Command::Show => show(ctx, explicit),
    }
}

fn show(ctx: &Ctx, explicit: Option<PathBuf>) -> Result<()> {
    let base = super::command();
    let file = match config::locate(explicit.as_deref()) {
        Some(p) => {
            let f = config::load(&p)?;
            config::check(&base, &f)?;
            Some(f)
        }
        None => None,
    };
    let cmd = match &file {
        Some(f) => config::apply(base.clone(), f),
        None => base.clone(),
    };
    // What `dshq daemon` alone would get: no flags, this environment, the file.
    let m = cmd
        .clone()
        .try_get_matches_from(["dshq", "daemon"])
        .map_err(|e| Error::Usage(e.render().to_string().trim().to_string()))?;
    let (_, dm) = m.subcommand().expect("daemon was given");
    let mut out = Vec::new();
    let mut add = |table: Option<&str>, owner: &clap::Command, ms: &clap::ArgMatches| {
        for a in owner.get_arguments() {
            let Some(long) = a.get_long() else { continue };
            let id = a.get_id().as_str();
            if id == "help" || (table.is_none() && !GLOBAL_KEYS.contains(&long)) {
                continue;
            }
            let raw: Vec<String> = ms
                .get_raw(id)
                .into_iter()
                .flatten()
                .map(|v| config::redact(&v.to_string_lossy()))
                .collect();
            // A flag that may be repeated shows as the list the file would hold.
            let list = matches!(a.get_action(), clap::ArgAction::Append);
            let value = match (list, raw.first()) {
                (_, None) => None,
                (true, _) => Some(format!(
                    "[{}]",
                    raw.iter()
                        .map(|v| config::toml_string(v))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                (false, Some(v)) => Some(v.clone()),
            };
            let in_file = file.as_ref().and_then(|f| {
                f.settings
                    .iter()
                    .find(|s| s.table.as_deref() == table && s.key == long)
            });
            let source = match (ms.value_source(id), in_file) {
                (Some(ValueSource::CommandLine), _) => "flag".to_string(),
                (Some(ValueSource::EnvVariable), _) => format!(
                    "env {}",
                    a.get_env().map(|e| e.to_string_lossy()).unwrap_or_default()
                ),
                (Some(ValueSource::DefaultValue), Some(s)) => format!(
                    "file {}:{}",
                    file.as_ref().expect("found in it").path.display(),
                    s.line
                ),
                (Some(_), _) => "default".to_string(),
                (None, _) => "unset".to_string(),
            };
            let key = match table {
                Some(t) => format!("{t}.{long}"),
                None => long.to_string(),
            };
            out.push(Effective {
                key,
                value,
                source,
                list,
            });
        }
    };
    add(None, &cmd, &m);
    let daemon = cmd.find_subcommand(DAEMON).expect("the daemon command");
    add(Some(DAEMON), daemon, dm);
    // The tables beyond the settings, each entry as the file writes it: only a file
    // sets them.
    if let Some(f) = &file {
        for t in &f.tables {
            out.push(Effective {
                key: format!("{}.{}", t.table.as_deref().unwrap_or_default(), t.key),
                value: Some(t.value.clone()),
                source: format!("file {}:{}", f.path.display(), t.line),
                list: false,
            });
        }
    }
    // The root as the commands resolve it (the default when no setting names one).
    if let Some(root) = out.iter_mut().find(|e| e.key == "root") {
        if root.value.is_none() {
            root.value = Some(ctx.root.dir().display().to_string());
            root.source = "default".into();
        }
    }
    let tables: Vec<String> = file
        .iter()
        .flat_map(|f| f.tables.iter())
        .filter_map(|t| t.table.clone())
        .collect();
    emit(ctx.json, &out, || {
        let mut s = String::new();
        let mut in_table: Option<String> = None;
        for e in &out {
            let (table, key) = match tables
                .iter()
                .chain(std::iter::once(&DAEMON.to_string()))
                .filter(|t| e.key.starts_with(&format!("{t}.")))
                // The most specific table (`teams.conversations` over `teams`).
                .max_by_key(|t| t.len())
            {
                Some(t) => (Some(t.clone()), &e.key[t.len() + 1..]),
                None => (None, e.key.as_str()),
            };
            if table.is_some() && table != in_table {
                s.push_str(&format!("\n[{}]\n", table.as_deref().unwrap_or_default()));
                in_table = table.clone();
            }
            if table.as_deref().is_some_and(|t| t != DAEMON) {
                // A table entry: its value as the file wrote it (TOML already).
                s.push_str(&format!(
                    "{key} = {}  # {}\n",
                    crate::text::one_line(e.value.as_deref().unwrap_or_default()),
                    crate::text::one_line(&e.source)
                ));
                continue;
            }
            match &e.value {
                Some(v) if e.list => s.push_str(&format!(
                    "{key} = {}  # {}\n",
                    crate::text::one_line(v),
                    crate::text::one_line(&e.source)
                )),
                Some(v) => s.push_str(&format!(
                    "{key} = {}  # {}\n",
                    config::toml_string(v),
                    crate::text::one_line(&e.source)
                )),
                None => s.push_str(&format!("# {key} (unset)\n")),
            }
        }
        s
    });
    Ok(())
}
