//! `dshq claude-code`: headless Claude Code asks its questions through dshq.
//!
//! `dshq claude-code hook` is a `PreToolUse` command hook. For an `AskUserQuestion` call it
//! asks the model's questions as a dshq request, for an `ExitPlanMode` call the plan as a
//! plan review, under an id derived from the session and the tool call
//! ([`event::request_id`]), so the same call always finds the same request. When the
//! request has an outcome the hook prints the decision (`allow` with the answers, or
//! `deny` with the reason); when it has none after `--wait`, it defers the call (or, as
//! configured, denies it or lets Claude Code ask), so a `claude -p` run ends and a later
//! `claude -p --resume SESSION` runs the hook again, which then finds the answer.
//! `dshq claude-code resume ID` is that later step: it waits for the request's outcome and
//! runs `claude -p --resume SESSION` in the session's directory; `hook --resume` starts it
//! in the background for every deferred call.
//!
//! The hook is a gate, and it fails closed: a malformed event, a store error, a command-line
//! mistake in the settings, even a bug is reported on stderr as `dshq claude-code hook:
//! CODE: message` with stdout empty and exit status 2, which Claude Code's hook contract
//! documents as the blocking error (the call does not run; stderr is the reason Claude
//! sees). Any other non-zero status is a non-blocking error there, and the tool call would
//! go ahead: a plan nobody reviewed would run. Tools other than these two get no opinion
//! (exit 0, no output). Source: Claude Code's hooks reference, "PreToolUse decision
//! control" and "Exit code output" (docs/DESIGN.md, "Agents where they work").
//!
//! With no answer after `--wait`, `--unanswered deny` and `--unanswered ask` end the
//! request (aborted, with the reason), since nobody will resume the call to read a later
//! answer; `defer` (the default) leaves it open for `claude -p --resume`, and `--resume`
//! starts `dshq claude-code resume` to run that once the answer comes and Claude Code
//! itself (not a shell between it and the hook) has exited, its output kept in a log file
//! the deferral names.

pub mod event;
pub mod process;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::Duration;

use serde_json::Value;

use self::event::{Event, Verdict};
use super::{parse_wait_timeout, wait, Ctx};
use crate::app;
use crate::core::audit::{Actor, Source};
use crate::error::{Error, Result};
use crate::files::safe_read;
use crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES;
use crate::protocol::{Code, Outcome};

/// The subcommands of `dshq claude-code`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// A PreToolUse hook: AskUserQuestion and ExitPlanMode calls become dshq requests; prints
    /// the decision (allow with the answers, deny, or defer until the answer comes).
    Hook(HookArgs),
    /// Wait for a deferred call's outcome, then run `claude -p --resume SESSION` in the
    /// session's directory (what `hook --resume` starts in the background).
    Resume(ResumeArgs),
}

/// What the hook does with a call whose request has no outcome after `--wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Unanswered {
    /// Defer the call: a `claude -p` run ends, `claude -p --resume` picks it up.
    Defer,
    /// Deny it, telling the model the question is still open in dshq.
    Deny,
    /// Let Claude Code ask the user itself (an interactive session).
    Ask,
}

/// Arguments of `dshq claude-code hook`.
#[derive(Debug, clap::Args)]
pub struct HookArgs {
    /// How long to wait for the answer before deferring (keep it below the hook's
    /// `timeout` in Claude Code's settings).
    #[arg(long, default_value = "0s", value_parser = parse_wait_timeout, value_name = "DUR")]
    pub wait: Duration,
    /// What to tell Claude Code when there is no answer yet.
    #[arg(long, value_enum, default_value = "defer")]
    pub unanswered: Unanswered,
    /// The dshq context the requests go to.
    #[arg(long, default_value = crate::protocol::types::DEFAULT_CONTEXT)]
    pub context: String,
    /// When deferring, start `dshq claude-code resume ID` in the background, so that the
    /// answer resumes the session by itself.
    #[arg(long)]
    pub resume: bool,
    /// With --resume: the Claude Code program to run.
    #[arg(long, default_value = "claude", value_name = "PROGRAM")]
    pub claude: PathBuf,
}

/// Arguments of `dshq claude-code resume`.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The request id (in the deferred call's reason; `cc-` and 32 hex digits).
    pub id: String,
    /// Give up after this long (WAIT_TIMEOUT); default: wait for the outcome forever.
    #[arg(long, value_parser = parse_wait_timeout, value_name = "DUR")]
    pub timeout: Option<Duration>,
    /// The Claude Code program to run.
    #[arg(long, default_value = "claude", value_name = "PROGRAM")]
    pub claude: PathBuf,
    /// Before resuming, wait until this process (the run that deferred) has exited.
    #[arg(long, value_name = "PID")]
    pub after_pid: Option<u32>,
    /// With --after-pid: when that process started (clock ticks since boot, as
    /// /proc/PID/stat says), so a later process reusing its pid is not waited for.
    #[arg(long, value_name = "TICKS", requires = "after_pid", hide = true)]
    pub after_started: Option<u64>,
    /// Append what this resumer does, and the resumed run's output, to FILE (created
    /// 0600); `hook --resume` gives one under the state root (`claude-code/ID.log`).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// More arguments for Claude Code, after `--` (e.g. `-- --output-format json`).
    #[arg(last = true)]
    pub args: Vec<OsString>,
}

/// Whether these process arguments run `dshq claude-code hook` (whatever else they hold).
pub fn is_hook_invocation(args: impl Iterator<Item = OsString>) -> bool {
    let args: Vec<OsString> = args.collect();
    args.windows(2)
        .any(|w| w[0] == "claude-code" && w[1] == "hook")
}

/// The exit status Claude Code's hook contract documents as the blocking error: the tool
/// call does not run, and stderr is the reason given to Claude.
pub const BLOCKING: i32 = 2;

/// A command-line error of the hook (a mistake in Claude Code's settings): reported like
/// any other failure of the hook, as the blocking error, on one line (not clap's usage).
pub fn usage_exit(e: &clap::Error) -> ! {
    let message = e.render().to_string();
    let first = message.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    eprintln!("dshq claude-code hook: {}: {first}", Code::Usage);
    std::process::exit(BLOCKING)
}

/// Run it.
pub fn run(ctx: &Ctx, c: Command) -> Result<()> {
    match c {
        Command::Hook(a) => hook(ctx, &a),
        Command::Resume(a) => resume(ctx, &a),
    }
}

/// The hook: decide, print, and exit; any failure is the blocking error (the gate fails
/// closed).
fn hook(ctx: &Ctx, a: &HookArgs) -> ! {
    let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decide(ctx, a)));
    match decided {
        Ok(Ok(Some(verdict))) => {
            println!("{}", verdict.to_json());
            std::process::exit(0)
        }
        Ok(Ok(None)) => std::process::exit(0),
        Ok(Err(e)) => {
            let ue = e.to_user_error();
            eprintln!(
                "dshq claude-code hook: {}: {} (the call is blocked: dshq could not ask a human)",
                ue.code,
                crate::text::one_line(&ue.message)
            );
            std::process::exit(BLOCKING)
        }
        Err(_) => {
            eprintln!(
                "dshq claude-code hook: an internal error (a bug); the call is blocked: dshq could not ask a human"
            );
            std::process::exit(BLOCKING)
        }
    }
}

/// Which of the two tools a request is for (with the plan asked, for a plan review).
enum Kind {
    Questions,
    Plan(String),
}

/// Read the event, ask (or find) its request, wait up to `--wait`, and decide.
fn decide(ctx: &Ctx, a: &HookArgs) -> Result<Option<Verdict>> {
    let bytes =
        safe_read::read_arg(Path::new("-"), DEFAULT_MAX_REQUEST_BYTES).map_err(|e| match e {
            safe_read::ReadError::Io(io) => Error::io("stdin", io),
            other => Error::question(Code::BadRequest, format!("the hook event: {other}")),
        })?;
    let ev = event::parse(&bytes)?;
    if ev.hook_event_name != event::PRE_TOOL_USE {
        return Err(Error::question(
            Code::BadRequest,
            format!(
                "this hook answers PreToolUse events, not {:?} (configure it under hooks.PreToolUse)",
                ev.hook_event_name
            ),
        ));
    }
    let (kind, request) = match ev.tool_name.as_str() {
        event::ASK_USER_QUESTION => (Kind::Questions, event::ask_request(&ev, &a.context)?),
        event::EXIT_PLAN_MODE => {
            let plan = match event::plan_text(&ev) {
                Some(p) => p.to_string(),
                None => plan_from_file(&ev)?,
            };
            let request = event::plan_request(&ev, &plan, &a.context);
            (Kind::Plan(plan), request)
        }
        _ => return Ok(None),
    };
    let id = event::request_id(&ev);
    let verdict = match ask_and_wait(ctx, &id, &request, a.wait)? {
        Some(outcome) => match &kind {
            Kind::Questions => event::ask_verdict(&ev, &outcome),
            Kind::Plan(plan) => event::plan_verdict(&ev, plan, &outcome),
        },
        None => not_yet(ctx, a, &id, &kind, &ev)?,
    };
    Ok(Some(verdict))
}

/// Where Claude Code writes plans: `$CLAUDE_CONFIG_DIR/plans`, else `~/.claude/plans`.
fn plans_dir() -> Option<PathBuf> {
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))?;
    Some(config.join("plans"))
}

/// The plan of an `ExitPlanMode` call that names its plan file instead of carrying it:
/// read only from Claude Code's plans directory (a tool input must not make the hook show
/// a reviewer any other file), only a regular file, bounded like a request.
fn plan_from_file(ev: &Event) -> Result<String> {
    let bad = |m: String| Error::question(Code::BadRequest, m);
    let path = event::plan_file(ev).ok_or_else(|| {
        bad("ExitPlanMode's tool_input has no plan (a string) and no planFilePath".into())
    })?;
    let dir = plans_dir().and_then(|d| d.canonicalize().ok());
    let file = Path::new(path).canonicalize().ok();
    let (Some(dir), Some(file)) = (dir, file) else {
        return Err(bad(format!(
            "ExitPlanMode's planFilePath {path:?} is not a plan Claude Code wrote"
        )));
    };
    if !file.starts_with(&dir) {
        return Err(bad(format!(
            "ExitPlanMode's planFilePath {path:?} is not in {}: only plans there are read",
            dir.display()
        )));
    }
    let bytes = safe_read::read_limited(&file, DEFAULT_MAX_REQUEST_BYTES)
        .map_err(|e| bad(format!("ExitPlanMode's planFilePath {path:?}: {e}")))?;
    String::from_utf8(bytes)
        .map_err(|_| bad(format!("ExitPlanMode's planFilePath {path:?} is not UTF-8")))
}

/// Ask `request` unless the call's request exists already (a resumed call), then wait up
/// to `wait` for its outcome.
fn ask_and_wait(ctx: &Ctx, id: &str, request: &Value, wait: Duration) -> Result<Option<Outcome>> {
    let mut store = ctx.store()?;
    // The id is this tool call's own: a request under it is this call's, asked before
    // the run deferred (perhaps from another directory, so its meta differs).
    if store.get(id)?.is_none() {
        let bytes = serde_json::to_vec(request).expect("a request serializes");
        let asked = app::ask::ask(
            &mut store,
            &ctx.root,
            app::ask::Ask {
                bytes: &bytes,
                fallback_id: None,
                outcome_under_fallback: false,
                source: Source::Cli,
                actor: Actor::Cli,
                own_only: false,
            },
        )?;
        if let crate::store::Asked::Rejected { error, .. } = asked {
            return Err(Error::Question(error));
        }
    }
    drop(store);
    match wait::wait_for(&ctx.root, id, Some(wait)) {
        Ok(outcome) => Ok(Some(outcome)),
        Err(Error::WaitTimeout { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The verdict while the request has no outcome, per `--unanswered`. A deny or an ask
/// ends the request (aborted, saying why): nobody will resume this call to read a later
/// answer, and a reviewer must not answer a question that no longer waits. If it was
/// answered meanwhile, that answer is the verdict.
fn not_yet(ctx: &Ctx, a: &HookArgs, id: &str, kind: &Kind, ev: &Event) -> Result<Verdict> {
    let waiting =
        format!("Waiting for a human: dshq request {id} (answer it with `dshq answer {id}`).");
    let end = |why: &str| -> Result<Option<Verdict>> {
        let mut store = ctx.store()?;
        match app::ask::abort(&mut store, &ctx.root, id, Some(why), &Actor::Cli) {
            Ok(_) => Ok(None),
            // Answered (or ended) between the wait and the abort: that is the verdict.
            Err(Error::RequestFinal { .. }) => {
                let row = store.get(id)?;
                Ok(row.and_then(|r| r.outcome()).map(|o| match kind {
                    Kind::Questions => event::ask_verdict(ev, &o),
                    Kind::Plan(plan) => event::plan_verdict(ev, plan, &o),
                }))
            }
            Err(e) => Err(e),
        }
    };
    Ok(match a.unanswered {
        Unanswered::Defer => {
            if a.resume {
                let log = spawn_resumer(ctx, id, &a.claude)?;
                Verdict::Defer(format!(
                    "{waiting} Once answered, the session is resumed; that run's output goes to {}.",
                    log.display()
                ))
            } else {
                Verdict::Defer(waiting)
            }
        }
        Unanswered::Deny => {
            match end("no answer within the Claude Code hook's --wait: the call was denied")? {
                Some(v) => v,
                None => Verdict::Deny(format!(
                    "No human answered dshq request {id} in time; it is closed. Carry on without the answer, or ask again later."
                )),
            }
        }
        Unanswered::Ask => {
            match end("no answer within the Claude Code hook's --wait: Claude Code asks the user itself")? {
                Some(v) => v,
                None => Verdict::Ask(format!(
                    "No human answered dshq request {id} in time (it is closed): Claude Code asks you instead."
                )),
            }
        }
    })
}

/// Where the resumer of request `id` keeps its log: `ROOT/claude-code/ID.log`.
pub fn resume_log(ctx: &Ctx, id: &str) -> PathBuf {
    ctx.root.dir().join("claude-code").join(format!("{id}.log"))
}

/// Start `dshq claude-code resume ID` in its own session, detached from the hook (it
/// outlives it, and the run that deferred), with no terminal and no inherited pipes; it
/// waits for Claude Code itself ([`process::claude_code`]) and writes to its log, whose
/// path is returned.
fn spawn_resumer(ctx: &Ctx, id: &str, claude: &Path) -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error::io("the dshq binary", e))?;
    let log = resume_log(ctx, id);
    let pid = process::claude_code();
    let mut c = Process::new(exe);
    c.arg("--root")
        .arg(ctx.root.dir())
        .args(["claude-code", "resume", id, "--claude"])
        .arg(claude)
        .arg("--after-pid")
        .arg(pid.to_string())
        .arg("--log")
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(p) = process::read(pid) {
        c.arg("--after-started").arg(p.started.to_string());
    }
    crate::sys::in_new_session(&mut c)
        .spawn()
        .map_err(|e| Error::io("dshq claude-code resume", e))?;
    Ok(log)
}

/// The session id and directory a request of the hook recorded in its meta.
fn session_of(ctx: &Ctx, id: &str) -> Result<(String, PathBuf)> {
    let row = {
        let mut store = ctx.read_store()?;
        store.get(id)?
    };
    let row = row.ok_or_else(|| Error::NotFound(id.to_string()))?;
    let not_ours = || {
        Error::question(
            Code::BadRequest,
            format!("request {id} was not asked by `dshq claude-code hook` (no meta.claudeCode)"),
        )
    };
    let meta = row.request().and_then(|r| r.meta).ok_or_else(not_ours)?;
    let cc = meta.get("claudeCode").ok_or_else(not_ours)?;
    let session = cc
        .get("sessionId")
        .and_then(Value::as_str)
        .ok_or_else(not_ours)?;
    // The meta is the asker's: anyone who can ask can write it. The id goes to `claude` as
    // one argument, never through a shell, and only in the protocol's id syntax (a letter
    // or digit first), so it can never be read as an option (`--dangerously-...`).
    if !crate::protocol::check::is_valid_id(session) {
        return Err(Error::question(
            Code::BadRequest,
            format!("request {id}: {session:?} is not a Claude Code session id"),
        ));
    }
    let cwd = cc.get("cwd").and_then(Value::as_str).map(PathBuf::from);
    let cwd = cwd
        .filter(|d| d.is_absolute() && d.is_dir())
        .ok_or_else(|| {
            Error::question(
                Code::BadRequest,
                format!("request {id}: its session's directory is not an existing absolute path"),
            )
        })?;
    Ok((session.to_string(), cwd))
}

/// Wait for the outcome (any: the resumed run's hook turns it into allow or deny), then
/// run Claude Code on the session and end with its exit status.
fn resume(ctx: &Ctx, a: &ResumeArgs) -> Result<()> {
    let log = a.log.as_deref().map(open_log).transpose()?;
    let note = |line: String| {
        if let Some(mut f) = log.as_ref() {
            use std::io::Write;
            let _ = writeln!(
                f,
                "{} dshq claude-code resume: {line}",
                crate::clock::rfc3339(crate::clock::now_ms())
            );
        }
    };
    note(format!("waiting for the outcome of {}", a.id));
    let waited = wait::wait_for(&ctx.root, &a.id, a.timeout);
    if let Err(e) = &waited {
        note(format!("gave up: {e}"));
    }
    waited?;
    let (session, cwd) = match session_of(ctx, &a.id) {
        Ok(s) => s,
        Err(e) => {
            note(format!("cannot resume: {e}"));
            return Err(e);
        }
    };
    if let Some(pid) = a.after_pid {
        note(format!(
            "answered; waiting for Claude Code (pid {pid}) to exit"
        ));
        process::wait_gone(pid, a.after_started);
    }
    note(format!(
        "resuming: {} -p --resume {session} in {}",
        a.claude.display(),
        cwd.display()
    ));
    let mut c = Process::new(&a.claude);
    c.args(["-p", "--resume", &session])
        .args(&a.args)
        .current_dir(&cwd)
        .stdin(Stdio::null());
    if let Some(f) = log.as_ref() {
        let out = f.try_clone().map_err(|e| Error::io("the resume log", e))?;
        let err = f.try_clone().map_err(|e| Error::io("the resume log", e))?;
        c.stdout(out).stderr(err);
    }
    let status = c.status().map_err(|e| {
        note(format!("cannot run {}: {e}", a.claude.display()));
        Error::io(&a.claude, e)
    })?;
    note(format!("the resumed run ended: {status}"));
    std::process::exit(status.code().unwrap_or(1))
}

/// Open (append, create 0600, in a 0700 directory) the resumer's log.
fn open_log(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(dir, e))?;
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io(path, e))
}
