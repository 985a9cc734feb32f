//! `dshq config default|check|show`: the config file ([`crate::config`]).

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
pub struct Checked {
    /// The file.
    pub file: String,
    /// Settings in it.
    pub settings: usize,
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
            let report = Checked {
                file: path.display().to_string(),
                settings: f.settings.len(),
            };
            emit(ctx.json, &report, || {
                format!("{}: ok ({} settings)\n", report.file, report.settings)
            });
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
            let value = ms
                .get_raw(id)
                .and_then(|mut v| v.next())
                .map(|v| config::redact(&v.to_string_lossy()));
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
            out.push(Effective { key, value, source });
        }
    };
    add(None, &cmd, &m);
    let daemon = cmd.find_subcommand(DAEMON).expect("the daemon command");
    add(Some(DAEMON), daemon, dm);
    // The root as the commands resolve it (the default when no setting names one).
    if let Some(root) = out.iter_mut().find(|e| e.key == "root") {
        if root.value.is_none() {
            root.value = Some(ctx.root.dir().display().to_string());
            root.source = "default".into();
        }
    }
    emit(ctx.json, &out, || {
        let mut s = String::new();
        let mut in_daemon = false;
        for e in &out {
            let (key, daemon_key) = match e.key.strip_prefix("daemon.") {
                Some(k) => (k, true),
                None => (e.key.as_str(), false),
            };
            if daemon_key && !in_daemon {
                s.push_str(&format!("\n[{DAEMON}]\n"));
                in_daemon = true;
            }
            match &e.value {
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
