//! Every block of the README and the guide is run as written, or says why it cannot be.
//!
//! The pages are README.md and docs/guide/*.md. Each fenced block carries a marker: an HTML
//! comment on the line before it (the tour's blocks are marked by the tour's own
//! `<!-- tour:begin -->` ... `<!-- tour:end -->`, the client snippets by `runnable` in their
//! info string). What each marker asks:
//!
//! - `<!-- run: SESSION [postgres] -->`: a `console` block of a shell session. A page's blocks
//!   of one session run in order, as a person at a terminal would type them: every `$ ` line
//!   in bash on a pty 100 columns wide, in a fresh directory that is also `$HOME` (so the
//!   default state root is a fresh one), shown as `/home/you` (`/tmp/demo` and the tour's
//!   `/tmp/tour` name it too), with this build's `dshq` first on `PATH`, the shell's
//!   variables, its working directory and `$?` carried from one line to the next. `dshq ... daemon` starts in the background
//!   and its log is its output. What the terminal shows must be the lines under the command,
//!   times, ids and column padding aside; a line `...` stands for any lines, and `...` inside
//!   a line for any text; a last line `^C` types Ctrl-C once the lines before it are shown.
//!   The ports the pages name (7465, 9465, 8700, 9000) are free ports of the run. Between
//!   commands the session waits, as a person reading the log would, until each daemon has
//!   taken in its inbox, and a read that does not show it yet is looked at again until the
//!   deadline. `postgres`: `DSHQ_STORE` names a fresh database of the suite's server.
//! - `<!-- file: SESSION PATH [append] -->`: the block is written to PATH (under the session's
//!   directory; `~/` is its home) at that point of the session.
//! - `<!-- log: SESSION -->`: the lines are in the log of the session's first daemon, in this
//!   order, once it has stopped on SIGTERM at the end of the session.
//! - `<!-- run-mcp: SESSION -->`: an MCP transcript: `>` lines go to `dshq mcp`'s stdin, `<`
//!   lines are what it must answer, `$` lines run in the session's shell.
//! - `<!-- check: request|config|mcp-stdio-config|mcp-http-config -->`: the document is what
//!   it says: `dshq validate` takes the request, `dshq config check` the config; the MCP
//!   host configuration starts a server (or reaches the daemon's `/mcp` with the token its
//!   placeholder names) that answers `initialize` and lists the five tools.
//! - `<!-- same-as: PATH -->` / `<!-- excerpt: PATH -->`: the block is the file (or lines of
//!   it) in the repository, which its own test runs.
//! - `<!-- snippet: NAME -->` (the install guide, run by `tests/it/release.rs`),
//!   `<!-- example: NAME -->` (the dsh guide, run by `tests/it/dsh.rs`), and `python runnable`
//!   / `js runnable` blocks (run by `tests/it/snippets.rs`).
//! - `<!-- not-run: REASON -->`: cannot run here, and why.
//!
//! A block with none of these fails `every_block_is_run_or_says_why_not`.
//! `DSHQ_DOCS_TRANSCRIPT=DIR` writes what each session's terminal really showed to
//! DIR/PAGE.SESSION.txt: the text to paste into a page when the output changes on purpose.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::*;

/// README.md, then the guide's pages in name order: (path from the repository, text).
pub fn pages() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_string()];
    let mut guide: Vec<String> = fs::read_dir(repo().join("docs/guide"))
        .expect("docs/guide")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/guide/{n}"))
        .collect();
    guide.sort();
    names.extend(guide);
    names
        .into_iter()
        .map(|n| {
            let text = fs::read_to_string(repo().join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

/// What a block's marker asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Marker {
    Run {
        session: String,
        postgres: bool,
    },
    Mcp {
        session: String,
    },
    File {
        session: String,
        path: String,
        append: bool,
    },
    Log {
        session: String,
    },
    Check(String),
    SameAs(String),
    Excerpt(String),
    Snippet(String),
    Example(String),
    Runnable,
    NotRun(String),
}

/// A fenced block of a page.
#[derive(Debug, Clone)]
pub struct Block {
    pub page: String,
    /// The line of its opening fence, from 1.
    pub line: usize,
    pub info: String,
    pub body: Vec<String>,
    pub marker: Option<Marker>,
    /// A comment before it that is no marker this file knows.
    pub unknown: Option<String>,
}

fn parse_marker(comment: &str) -> Option<Marker> {
    let inner = comment.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    let (kind, rest) = inner.split_once(':')?;
    let rest = rest.trim();
    let words: Vec<&str> = rest.split_whitespace().collect();
    let first = || words.first().map(|w| w.to_string()).unwrap_or_default();
    Some(match kind.trim() {
        "tour" => return None,
        "run" => Marker::Run {
            session: first(),
            postgres: words.contains(&"postgres"),
        },
        "run-mcp" => Marker::Mcp { session: first() },
        "file" => Marker::File {
            session: first(),
            path: words.get(1)?.to_string(),
            append: words.get(2) == Some(&"append"),
        },
        "log" => Marker::Log { session: first() },
        "check" => Marker::Check(first()),
        "same-as" => Marker::SameAs(first()),
        "excerpt" => Marker::Excerpt(first()),
        "snippet" => Marker::Snippet(first()),
        "example" => Marker::Example(first()),
        "not-run" => Marker::NotRun(rest.to_string()),
        _ => return None,
    })
}

/// Every fenced block of `text`, with its marker.
pub fn blocks(page: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_tour = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line == "<!-- tour:begin -->" {
            in_tour = true;
        } else if line == "<!-- tour:end -->" {
            in_tour = false;
        }
        let Some(info) = line.strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            body.push(lines[i].to_string());
            i += 1;
        }
        i += 1;
        // The body keeps the fence's indentation out.
        let indent = lines[start].len() - lines[start].trim_start().len();
        let body: Vec<String> = body
            .into_iter()
            .map(|l| {
                if l.len() >= indent && l[..indent].trim().is_empty() {
                    l[indent..].to_string()
                } else {
                    l
                }
            })
            .collect();
        let before = start.checked_sub(1).map(|b| lines[b].trim()).unwrap_or("");
        let comment = before.starts_with("<!--") && before.ends_with("-->");
        let mut marker = if comment { parse_marker(before) } else { None };
        let mut unknown = None;
        if let Some(name) = before
            .strip_prefix("<!-- tour:file ")
            .and_then(|r| r.strip_suffix(" -->"))
        {
            marker = Some(Marker::File {
                session: "tour".into(),
                path: name.trim().to_string(),
                append: false,
            });
        } else if comment && marker.is_none() {
            unknown = Some(before.to_string());
        }
        let words: Vec<&str> = info.split_whitespace().collect();
        if marker.is_none() && words.contains(&"runnable") {
            marker = Some(Marker::Runnable);
        }
        if marker.is_none() && in_tour && info.trim() == "console" {
            marker = Some(Marker::Run {
                session: "tour".into(),
                postgres: false,
            });
        }
        out.push(Block {
            page: page.to_string(),
            line: start + 1,
            info: info.trim().to_string(),
            body,
            marker,
            unknown,
        });
    }
    out
}

fn all_blocks() -> Vec<Block> {
    pages()
        .iter()
        .flat_map(|(name, text)| blocks(name, text))
        .collect()
}

/// A command line of a console block and the lines the page shows under it.
#[derive(Debug, Clone)]
pub struct Step {
    pub command: String,
    pub expected: Vec<String>,
}

/// `$ ` lines (a line ending in `\` continues on the next) and what follows each.
pub fn steps(body: &[String]) -> Vec<Step> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let Some(first) = body[i].strip_prefix("$ ") else {
            panic!("a console block starts with `$ `: {:?}", body[i]);
        };
        let mut command = first.to_string();
        i += 1;
        while command.ends_with('\\') && i < body.len() {
            command.push('\n');
            command.push_str(&body[i]);
            i += 1;
        }
        let mut expected = Vec::new();
        while i < body.len() && !body[i].starts_with("$ ") {
            expected.push(body[i].clone());
            i += 1;
        }
        out.push(Step { command, expected });
    }
    out
}

/// One line of an MCP transcript.
#[derive(Debug, Clone)]
enum McpLine {
    Send(String),
    Receive(String),
    Shell(Step),
}

fn mcp_lines(body: &[String]) -> Vec<McpLine> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let l = &body[i];
        if let Some(m) = l.strip_prefix("> ") {
            out.push(McpLine::Send(m.to_string()));
            i += 1;
        } else if let Some(m) = l.strip_prefix("< ") {
            out.push(McpLine::Receive(m.to_string()));
            i += 1;
        } else {
            let mut j = i + 1;
            while j < body.len() && !body[j].starts_with(['$', '>', '<']) {
                j += 1;
            }
            out.extend(steps(&body[i..j]).into_iter().map(McpLine::Shell));
            i = j;
        }
    }
    out
}

/// What a session does, in the page's order.
#[derive(Debug, Clone)]
enum Item {
    Steps(Vec<Step>),
    File {
        path: String,
        text: String,
        append: bool,
    },
    Mcp(Vec<McpLine>),
    Log(Vec<String>),
}

/// A page's blocks of one session.
#[derive(Debug, Clone)]
pub struct Session {
    pub page: String,
    pub name: String,
    postgres: bool,
    items: Vec<Item>,
}

fn sessions_of(blocks: &[Block]) -> Vec<Session> {
    let mut out: Vec<Session> = Vec::new();
    for b in blocks {
        let (name, item, pg) = match &b.marker {
            Some(Marker::Run { session, postgres }) => {
                (session, Item::Steps(steps(&b.body)), *postgres)
            }
            Some(Marker::Mcp { session }) => (session, Item::Mcp(mcp_lines(&b.body)), false),
            Some(Marker::File {
                session,
                path,
                append,
            }) => (
                session,
                Item::File {
                    path: path.clone(),
                    text: b.body.join("\n") + "\n",
                    append: *append,
                },
                false,
            ),
            Some(Marker::Log { session }) => (session, Item::Log(b.body.clone()), false),
            _ => continue,
        };
        match out.iter_mut().find(|s| s.page == b.page && &s.name == name) {
            Some(s) => {
                s.items.push(item);
                s.postgres |= pg;
            }
            None => out.push(Session {
                page: b.page.clone(),
                name: name.clone(),
                postgres: pg,
                items: vec![item],
            }),
        }
    }
    out
}

/// Every session of the README and the guide.
pub fn sessions() -> Vec<Session> {
    sessions_of(&all_blocks())
}

// ---- comparing what a terminal showed with what a page shows -----------------------------

/// What a session's home (its directory) is called on the pages: `/home/you`; the tour's
/// `/tmp/tour` and the guide's `/tmp/demo` are names of it too.
const HOME: &str = "/home/you";

/// A line with what may differ from run to run replaced, colours and column padding left out.
pub fn normalize(line: &str, dir: &str) -> String {
    use std::sync::OnceLock;
    static RULES: OnceLock<Vec<(regex::Regex, &'static str)>> = OnceLock::new();
    let rules = RULES.get_or_init(|| {
        [
            (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "<time>"),
            (r"\b(\d+[smhd] ago|in \d+[smhd]|just now)\b", "<age>"),
            (
                r"\b\d+(\.\d+)?(ms|µs|s|m|h|d)( \d+(\.\d+)?(ms|µs|s|m|h|d))*\b",
                "<duration>",
            ),
            (r#""(\w+)Ms":\d+"#, r#""${1}Ms":<ms>"#),
            (r"\bhead (\d+) [0-9a-f]{64}\b", "head $1 <hash>"),
            (r#""hash":"[0-9a-f]{64}""#, r#""hash":"<hash>""#),
            (r"\bdshq_[0-9a-f]{64}\b", "dshq_<64 hex digits>"),
            (r"\bed25519:[0-9a-f]{64}\b", "ed25519:<key>"),
            (r"\bmsg_[0-9a-f]{32}\b", "msg_<id>"),
            (r"\bask-[0-9a-f]{32}\b", "ask-<id>"),
            (r"\binstance [0-9a-f]{32}\b", "instance <id>"),
            (r" {2,}", " "),
        ]
        .into_iter()
        .map(|(re, to)| (regex::Regex::new(re).unwrap(), to))
        .collect()
    });
    static ANSI: OnceLock<regex::Regex> = OnceLock::new();
    let ansi = ANSI.get_or_init(|| regex::Regex::new("\x1b\\[[0-9;?]*[A-Za-z]").unwrap());
    let mut s = ansi
        .replace_all(line, "")
        .replace(dir, HOME)
        .replace("/tmp/tour", HOME)
        .replace("/tmp/demo", HOME);
    for (re, to) in rules {
        s = re.replace_all(&s, *to).into_owned();
    }
    s.trim_end().to_string()
}

/// Whether a normalized line of the page says what a normalized line of the terminal says:
/// equal; or, for a table cell the terminal cut (`…`), one the beginning of the other, the
/// cut word aside (where it is cut depends on how wide the times before it are); or a page
/// line with `...` in it, which stands for any text.
pub fn same_line(want: &str, got: &str) -> bool {
    if want == got {
        return true;
    }
    if want.contains("...") {
        let pattern: Vec<String> = want.split("...").map(regex::escape).collect();
        let re = regex::Regex::new(&format!("^{}$", pattern.join(".*"))).unwrap();
        return re.is_match(got);
    }
    let cut = |l: &str| -> Option<String> {
        let body = l.strip_suffix('…')?;
        Some(match body.rfind(' ') {
            Some(i) => body[..i].to_string(),
            None => String::new(),
        })
    };
    match (cut(want), cut(got)) {
        (Some(w), Some(g)) => w.starts_with(&g) || g.starts_with(&w),
        _ => false,
    }
}

/// Whether a daemon's log `got` holds every line of `want` (the `...` lines aside), each
/// matched to a line of its own, in any order: the daemon logs from several threads (the
/// file loop, the web host, the channels' sender), whose lines interleave as they run.
pub fn holds_lines(want: &[String], got: &[String]) -> bool {
    let mut used = vec![false; got.len()];
    want.iter().filter(|w| *w != "...").all(|w| {
        match (0..got.len()).find(|&i| !used[i] && same_line(w, &got[i])) {
            Some(i) => {
                used[i] = true;
                true
            }
            None => false,
        }
    })
}

/// Whether `got` is what `want` shows, a line `...` standing for any lines.
pub fn same_lines(want: &[String], got: &[String]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w == "..." => (0..=got.len()).any(|k| same_lines(rest, &got[k..])),
        Some((w, rest)) => match got.split_first() {
            Some((g, grest)) => same_line(w, g) && same_lines(rest, grest),
            None => false,
        },
    }
}

fn lines_of(text: &str, dir: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    text.trim_end_matches('\n')
        .split('\n')
        .map(|l| normalize(l, dir))
        .collect()
}

// ---- running a session ----------------------------------------------------------------------

/// The ports the pages name, each replaced by a free one in a run.
const PAGE_PORTS: [u16; 4] = [7465, 9465, 8700, 9000];

/// The longest part of a normalized line that a terminal shows as it is: no placeholder of
/// `normalize`, no `...`, nothing but printable ASCII (the pty reader sees bytes).
fn plainest_part(line: &str) -> String {
    let re = regex::Regex::new(r"<[a-z0-9 ]+>|\.\.\.|[^\x20-\x7e]").unwrap();
    re.split(line)
        .max_by_key(|p| p.len())
        .unwrap_or("")
        .to_string()
}

/// What a pty reader read (one char per byte) as text, without carriage returns.
fn decode(raw: &str) -> String {
    let bytes: Vec<u8> = raw.chars().map(|c| c as u32 as u8).collect();
    String::from_utf8_lossy(&bytes).replace('\r', "")
}

/// One run of a session: its directory, shell state, daemons and what went wrong.
pub struct Runner {
    pub title: String,
    dir: tempfile::TempDir,
    store: Option<String>,
    ports: Vec<(u16, u16)>,
    daemons: Vec<(Daemon, PathBuf, Step)>,
    mcp: Option<(Child, mpsc::Receiver<String>)>,
    pub transcript: String,
    pub failures: Vec<String>,
}

impl Runner {
    pub fn new(title: &str, store: Option<String>) -> Runner {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".session-env"), "").unwrap();
        fs::write(
            dir.path().join(".session-cwd"),
            dir.path().display().to_string(),
        )
        .unwrap();
        Runner {
            title: title.to_string(),
            dir,
            store,
            ports: PAGE_PORTS
                .iter()
                .map(|p| (*p, crate::browser::free_port()))
                .collect(),
            daemons: Vec::new(),
            mcp: None,
            transcript: String::new(),
            failures: Vec::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn dir_text(&self) -> String {
        self.dir().display().to_string()
    }

    /// The page's text as this run types it: its directory for `/tmp/demo` (`/tmp/tour`),
    /// free ports for the page's.
    fn typed(&self, text: &str) -> String {
        let mut s = text
            .replace("/tmp/tour", &self.dir_text())
            .replace("/tmp/demo", &self.dir_text())
            .replace(HOME, &self.dir_text());
        for (page, real) in &self.ports {
            let re = regex::Regex::new(&format!(r"\b{page}\b")).unwrap();
            s = re.replace_all(&s, real.to_string().as_str()).into_owned();
        }
        s
    }

    /// What the terminal showed, as the page would show it: the page's ports again.
    fn as_page(&self, shown: &str) -> String {
        let mut s = shown.to_string();
        for (page, real) in &self.ports {
            let re = regex::Regex::new(&format!(r"\b{real}\b")).unwrap();
            s = re.replace_all(&s, page.to_string().as_str()).into_owned();
        }
        s
    }

    /// The person's shell: this build's `dshq` first on `PATH`, the directory as home, no
    /// colour (the pages have none), none of the test runner's dshq variables.
    fn shell(&self) -> Command {
        let bin_dir = bin().parent().unwrap().to_path_buf();
        let mut c = Command::new("bash");
        c.env_clear()
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir.display()),
            )
            .env("HOME", self.dir())
            .env("TMPDIR", self.dir())
            .env("USER", "alice")
            .env("TERM", "xterm-256color")
            .env("NO_COLOR", "1")
            .env("LANG", "C.UTF-8")
            .current_dir(self.dir());
        if let Some(url) = &self.store {
            c.env("DSHQ_STORE", url);
        }
        c
    }

    /// The prologue that puts a command in the state the previous ones left.
    fn prologue(&self) -> String {
        format!(
            "source {env}\ncd \"$(cat {cwd})\"\n",
            env = self.dir().join(".session-env").display(),
            cwd = self.dir().join(".session-cwd").display()
        )
    }

    /// Run `command` on a terminal; returns what it showed. With `interrupt`, Ctrl-C is
    /// typed once the terminal shows those lines. The shell's variables, its directory and
    /// the last command's status (`$?`) carry over to the next command, as in one shell.
    fn on_terminal(&self, command: &str, interrupt: Option<&[String]>) -> String {
        use rexpect::session::{spawn_with_options, Options};
        let state = |f: &str| self.dir().join(f).display().to_string();
        let script = format!(
            "stty rows 50 cols 100\n{prologue}(exit \"$(cat {rc} 2>/dev/null || echo 0)\")\n\
             {command}\n__rc=$?\n\
             declare -p $(compgen -v | grep -Ev '{special}') > {env} 2>/dev/null\n\
             pwd > {cwd}\necho $__rc > {rc}\nexit $__rc\n",
            prologue = self.prologue(),
            special = "^(BASH.*|EUID|PPID|UID|SHELLOPTS|BASHOPTS|FUNCNAME|GROUPS|PIPESTATUS|\
                       SHLVL|PWD|OLDPWD|_|RANDOM|SECONDS|LINENO|HISTCMD|DIRSTACK|COMP_.*|\
                       EPOCHREALTIME|EPOCHSECONDS|SRANDOM|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|\
                       IFS|OPTERR|OPTIND|PS4|COLUMNS|LINES|__rc)$",
            env = state(".session-env"),
            cwd = state(".session-cwd"),
            rc = state(".session-rc"),
        );
        let mut c = self.shell();
        c.arg("-c").arg(script);
        let mut p = spawn_with_options(
            c,
            Options {
                timeout_ms: Some(60_000),
                strip_ansi_escape_codes: false,
            },
        )
        .expect("spawn bash on a pty");
        let mut shown = String::new();
        if let Some(want) = interrupt {
            // The terminal shows the lines when it shows the last one's plainest part.
            let needle = plainest_part(want.last().map(String::as_str).unwrap_or(""));
            let before = p.exp_string(&needle).unwrap_or_else(|e| {
                panic!("{}: the terminal never showed {needle:?}: {e}", self.title)
            });
            shown.push_str(&before);
            shown.push_str(&needle);
            p.send_control('c').unwrap();
        }
        shown.push_str(&p.exp_eof().expect("the command ends"));
        decode(&shown)
    }

    /// The value `name` has in the shell's exported variables, if set.
    fn exported(&self, name: &str) -> Option<String> {
        let text = fs::read_to_string(self.dir().join(".session-env")).ok()?;
        let prefix = format!("declare -x {name}=\"");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.trim_end_matches('"').to_string())
    }

    fn cwd(&self) -> PathBuf {
        PathBuf::from(
            fs::read_to_string(self.dir().join(".session-cwd"))
                .unwrap()
                .trim(),
        )
    }

    /// The global flags of `dshq` that take a value, and `command`'s subcommand after them.
    fn dshq_words(command: &str) -> Option<(Option<String>, Vec<String>)> {
        let mut words = command.split_whitespace().peekable();
        while words.peek().is_some_and(|w| {
            w.contains('=') && !w.starts_with('-') && w.split('=').next().unwrap() != ""
        }) {
            words.next();
        }
        if words.next()? != "dshq" {
            return None;
        }
        let mut root = None;
        let mut rest = Vec::new();
        while let Some(w) = words.next() {
            match w {
                "--root" => root = words.next().map(str::to_string),
                "--store" | "--config" | "--log-format" | "--color" => {
                    words.next();
                }
                "--json" => {}
                _ => {
                    rest.push(w.to_string());
                    rest.extend(words.map(str::to_string));
                    break;
                }
            }
        }
        Some((root, rest))
    }

    /// The state root a `dshq` command line acts on.
    fn root_of(&self, root_flag: Option<String>) -> PathBuf {
        let cwd = self.cwd();
        match root_flag.or_else(|| self.exported("DSHQ_ROOT")) {
            Some(r) => {
                let r = r.replace('~', &self.dir_text());
                cwd.join(r)
            }
            None => self.dir().join(".local/state/dshq"),
        }
    }

    fn start_daemon(&mut self, step: &Step, root: PathBuf) {
        let log = self
            .dir()
            .join(format!(".daemon-{}.log", self.daemons.len()));
        // `A=b dshq daemon`: the assignments exported, then the daemon in the shell's place,
        // so that a signal to the process is a signal to the daemon.
        let typed = self.typed(&step.command);
        let mut words: Vec<&str> = typed.split(' ').collect();
        let assignments: Vec<&str> = words
            .iter()
            .take_while(|w| w.contains('=') && !w.starts_with('-'))
            .copied()
            .collect();
        words.drain(..assignments.len());
        let exports = if assignments.is_empty() {
            String::new()
        } else {
            format!("export {}\n", assignments.join(" "))
        };
        let child = self
            .shell()
            .arg("-c")
            .arg(format!(
                "{}{exports}exec {}",
                self.prologue(),
                words.join(" ")
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn the daemon");
        let d = Daemon::started(child, log);
        if step.command.contains("--listen") {
            assert!(
                wait_until(DEADLINE, || d.log_text().contains("listening on")),
                "{}: the daemon did not listen: {}",
                self.title,
                d.log_text()
            );
        }
        self.daemons.push((d, root, step.clone()));
    }

    /// Wait, as a person reading the daemons' logs would, until each has taken in its inbox.
    fn settle(&self) {
        for (_, root, _) in &self.daemons {
            let new = root.join("inbox/new");
            assert!(
                wait_until(DEADLINE, || fs::read_dir(&new)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(true)),
                "{}: the daemon left files in {}",
                self.title,
                new.display()
            );
        }
    }

    /// Before `dshq answer ID` (or `claim`, `show`) of a request something else asks (an MCP
    /// tool call, a daemon's inbox), wait until it exists.
    fn await_request(&self, command: &str) {
        let Some((root, rest)) = Self::dshq_words(command) else {
            return;
        };
        let (Some(sub), Some(id)) = (rest.first(), rest.get(1)) else {
            return;
        };
        if !["answer", "claim"].contains(&sub.as_str())
            || !id.starts_with(|c: char| c.is_ascii_alphanumeric())
        {
            return;
        }
        let root = self.root_of(root);
        let ok = wait_until(DEADLINE, || {
            self.shell()
                .arg("-c")
                .arg(format!(
                    "{}dshq --root '{}' show '{}' >/dev/null 2>&1",
                    self.prologue(),
                    root.display(),
                    id
                ))
                .status()
                .is_ok_and(|s| s.success())
        });
        assert!(ok, "{}: request {id} never arrived", self.title);
    }

    /// Commands that only read: looked at again until they show what the page shows.
    fn reads_only(command: &str) -> bool {
        if ["cat ", "ls ", "jq ", "wc "]
            .iter()
            .any(|p| command.starts_with(p))
        {
            return true;
        }
        let Some((_, rest)) = Self::dshq_words(command) else {
            return false;
        };
        let sub = rest.first().map(String::as_str).unwrap_or("");
        let two = rest.iter().take(2).cloned().collect::<Vec<_>>().join(" ");
        ["list", "show", "events", "history", "stats", "export"].contains(&sub)
            || [
                "audit verify",
                "provider status",
                "agent list",
                "token list",
            ]
            .contains(&two.as_str())
    }

    /// What the terminal showed, normalized, the Ctrl-C it echoed left out.
    fn shown_lines(&self, shown: &str) -> Vec<String> {
        let dir = self.dir_text();
        let mut lines: Vec<String> = lines_of(&self.as_page(shown), &dir)
            .into_iter()
            .filter(|l| l.trim() != "^C")
            .map(|l| l.replace("^C", ""))
            .collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        lines
    }

    fn compare(&mut self, step: &Step, shown: &str) -> bool {
        let dir = self.dir_text();
        let want: Vec<String> = step
            .expected
            .iter()
            .filter(|l| l.trim() != "^C")
            .map(|l| normalize(l, &dir))
            .collect();
        same_lines(&want, &self.shown_lines(shown))
    }

    fn fail(&mut self, step: &Step, shown: &str) {
        self.failures.push(format!(
            "{}:\n$ {}\n--- the page shows:\n{}\n--- the terminal showed:\n{}",
            self.title,
            step.command,
            step.expected.join("\n"),
            self.as_page(shown)
                .replace(&self.dir_text(), HOME)
                .trim_end()
        ));
    }

    /// One `$ ` line of the page.
    pub fn step(&mut self, step: &Step) {
        if let Some((root, rest)) = Self::dshq_words(&step.command) {
            if rest.first().map(String::as_str) == Some("daemon") {
                let root = self.root_of(root);
                self.start_daemon(step, root);
                return;
            }
        }
        self.await_request(&step.command);
        let interrupt: Option<Vec<String>> = step
            .expected
            .iter()
            .position(|l| l.trim() == "^C")
            .map(|k| {
                step.expected[..k]
                    .iter()
                    .map(|l| normalize(l, &self.dir_text()))
                    .collect()
            });
        let command = self.typed(&step.command);
        let mut shown = self.on_terminal(&command, interrupt.as_deref());
        self.settle();
        if !self.compare(step, &shown) && Self::reads_only(&step.command) {
            let start = Instant::now();
            while start.elapsed() < DEADLINE {
                std::thread::sleep(Duration::from_millis(100));
                shown = self.on_terminal(&command, None);
                if self.compare(step, &shown) {
                    break;
                }
            }
        }
        self.transcript.push_str(&format!(
            "$ {}\n{}",
            step.command,
            self.as_page(&shown).replace(&self.dir_text(), HOME)
        ));
        if !self.compare(step, &shown) {
            self.fail(step, &shown);
        }
    }

    fn write_file(&mut self, path: &str, text: &str, append: bool) {
        let path = match path.strip_prefix("~/") {
            Some(p) => self.dir().join(p),
            None => self.cwd().join(path),
        };
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = self.typed(text);
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(&path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn mcp_line(&mut self, line: &McpLine) {
        match line {
            McpLine::Send(message) => {
                if self.mcp.is_none() {
                    let mut child = self
                        .shell()
                        .arg("-c")
                        .arg(format!("{}exec dshq mcp", self.prologue()))
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(fs::File::create(self.dir().join(".mcp.log")).unwrap())
                        .spawn()
                        .expect("spawn dshq mcp");
                    let out = child.stdout.take().unwrap();
                    let (tx, rx) = mpsc::channel();
                    std::thread::spawn(move || {
                        for l in BufReader::new(out).lines().map_while(Result::ok) {
                            if tx.send(l).is_err() {
                                break;
                            }
                        }
                    });
                    self.mcp = Some((child, rx));
                }
                let (child, _) = self.mcp.as_mut().unwrap();
                let stdin = child.stdin.as_mut().unwrap();
                writeln!(stdin, "{message}").unwrap();
                stdin.flush().unwrap();
                self.transcript.push_str(&format!("> {message}\n"));
            }
            McpLine::Receive(want) => {
                let got = self
                    .mcp
                    .as_ref()
                    .map(|(_, rx)| rx.recv_timeout(DEADLINE).unwrap_or_default())
                    .unwrap_or_default();
                self.transcript.push_str(&format!("< {got}\n"));
                let dir = self.dir_text();
                if !same_line(&normalize(want, &dir), &normalize(&got, &dir)) {
                    self.failures.push(format!(
                        "{}: dshq mcp answered\n{got}\nwhere the page shows\n{want}",
                        self.title
                    ));
                }
            }
            McpLine::Shell(step) => self.step(step),
        }
    }

    /// Run the whole session.
    pub fn run(&mut self, session: &Session) {
        for item in &session.items {
            match item {
                Item::Steps(steps) => {
                    for s in steps {
                        self.step(s);
                    }
                }
                Item::File { path, text, append } => self.write_file(path, text, *append),
                Item::Mcp(lines) => {
                    for l in lines {
                        self.mcp_line(l);
                    }
                }
                Item::Log(_) => {}
            }
        }
        self.finish(session);
    }

    /// Compare what each daemon's terminal showed (its log up to now), stop the daemons,
    /// then compare the session's `log:` blocks with what the first one logged in all.
    fn finish(&mut self, session: &Session) {
        let dir = self.dir_text();
        let mut shown_logs = Vec::new();
        for (d, _, step) in &self.daemons {
            shown_logs.push((step.clone(), d.log_text()));
        }
        for (step, shown) in shown_logs {
            self.transcript.push_str(&format!(
                "$ {} (its log by the end)\n{}",
                step.command,
                self.as_page(&shown).replace(&dir, HOME)
            ));
            if !self.compare(&step, &shown) {
                self.fail(&step, &shown);
            }
        }
        if let Some((mut child, _)) = self.mcp.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
        let mut logs = Vec::new();
        for (d, _, _) in self.daemons.drain(..) {
            let log = d.log.clone();
            let status = d.stop();
            logs.push((status, fs::read_to_string(log).unwrap_or_default()));
        }
        let blocks: Vec<&Vec<String>> = session
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Log(lines) => Some(lines),
                _ => None,
            })
            .collect();
        if !blocks.is_empty() {
            let (status, log) = logs.first().cloned().unwrap_or_default();
            let mut want = vec!["...".to_string()];
            for b in &blocks {
                want.extend(b.iter().map(|l| normalize(l, &dir)));
                want.push("...".into());
            }
            let got = lines_of(&self.as_page(&log), &dir);
            if status != 0 || !holds_lines(&want, &got) {
                self.failures.push(format!(
                    "{}: the daemon's log (exit status {status}) does not hold the page's log lines:\n{}\n--- it logged:\n{}",
                    self.title,
                    want.join("\n"),
                    got.join("\n")
                ));
            }
        }
        if let Ok(dir) = std::env::var("DSHQ_DOCS_TRANSCRIPT") {
            let name = format!("{}.{}.txt", session.page.replace('/', "_"), session.name);
            fs::create_dir_all(&dir).unwrap();
            fs::write(Path::new(&dir).join(name), &self.transcript).unwrap();
        }
    }
}

/// Run one session of a page: its failures, if any, and what its terminal showed.
pub fn run_session(session: &Session) -> (Vec<String>, String) {
    let store = session.postgres.then(|| {
        crate::throwaway::shared()
            .fresh_database()
            .expect("a fresh PostgreSQL database")
    });
    let mut r = Runner::new(&format!("{} ({})", session.page, session.name), store);
    r.run(session);
    (r.failures, r.transcript)
}

// ---- the tests ------------------------------------------------------------------------------

#[test]
fn every_block_is_run_or_says_why_not() {
    let blocks = all_blocks();
    let mut missing = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut reasons = Vec::new();
    let test_source = |f: &str| fs::read_to_string(repo().join("tests/it").join(f)).unwrap();
    for b in &blocks {
        let at = format!("{}:{}", b.page, b.line);
        if let Some(c) = &b.unknown {
            missing.push(format!("{at}: {c} is no marker this test knows"));
            continue;
        }
        let kind = match &b.marker {
            None => {
                missing.push(format!(
                    "{at}: a ```{} block with no marker (`<!-- run: ... -->`, `<!-- not-run: REASON -->`, ...)",
                    b.info
                ));
                continue;
            }
            Some(Marker::NotRun(reason)) => {
                if reason.split_whitespace().count() < 5 {
                    missing.push(format!("{at}: not-run says too little of why: {reason:?}"));
                }
                reasons.push(format!("{at}: {reason}"));
                "not run"
            }
            Some(Marker::Snippet(name)) => {
                if !test_source("release.rs").contains(&format!("\"{name}\"")) {
                    missing.push(format!("{at}: no test runs snippet {name}"));
                }
                "run by tests/it/release.rs"
            }
            Some(Marker::Example(name)) => {
                if !test_source("dsh.rs").contains(&format!("\"{name}\"")) {
                    missing.push(format!("{at}: no test runs example {name}"));
                }
                "run by tests/it/dsh.rs"
            }
            Some(Marker::Runnable) => "run by tests/it/snippets.rs",
            Some(Marker::Run { session, .. }) if session == "tour" => "run by tests/it/tour.rs",
            Some(Marker::Run { .. }) | Some(Marker::Mcp { .. }) => "run in a session",
            Some(Marker::File { .. }) | Some(Marker::Log { .. }) => "used by a session",
            Some(Marker::Check(k)) => {
                if !["request", "config", "mcp-stdio-config", "mcp-http-config"]
                    .contains(&k.as_str())
                {
                    missing.push(format!("{at}: no check {k:?}"));
                }
                "checked"
            }
            Some(Marker::SameAs(p)) | Some(Marker::Excerpt(p)) => {
                if !repo().join(p).is_file() {
                    missing.push(format!("{at}: no file {p}"));
                }
                "the repository's file"
            }
        };
        *counts.entry(kind.to_string()).or_default() += 1;
    }
    // A session's files and logs belong to a session that runs something.
    for s in sessions() {
        assert!(
            s.items
                .iter()
                .any(|i| matches!(i, Item::Steps(_) | Item::Mcp(_))),
            "{} session {} runs nothing",
            s.page,
            s.name
        );
    }
    println!("blocks of the README and the guide: {counts:?}");
    println!("not run here:\n{}", reasons.join("\n"));
    assert!(
        missing.is_empty(),
        "every block is run by a test or says why not:\n{}",
        missing.join("\n")
    );
    assert!(blocks.len() > 50, "{} blocks", blocks.len());
}

#[test]
fn the_guides_sessions_run_as_written() {
    let all: Vec<Session> = sessions()
        .into_iter()
        .filter(|s| s.name != "tour")
        .collect();
    assert!(all.len() >= 15, "{} sessions", all.len());
    // A few at a time: each runs real daemons.
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(s) = all.get(i) else { break };
                let (f, _) = run_session(s);
                failures.lock().unwrap().extend(f);
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} commands of the guide no longer do what the guide shows \
         (DSHQ_DOCS_TRANSCRIPT=DIR writes the real output):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

fn temp_file(text: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    fs::write(&path, text).unwrap();
    (dir, path)
}

/// Send `messages` to an MCP server over its stdin and read one line per request.
fn mcp_exchange(mut child: Child, messages: &[Value]) -> Vec<Value> {
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    for m in messages {
        writeln!(stdin, "{m}").unwrap();
        stdin.flush().unwrap();
        if m.get("id").is_some() {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            answers.push(serde_json::from_str(&line).unwrap_or(Value::Null));
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    answers
}

fn initialize() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "docs", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]
}

fn tool_names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["result"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

const TOOLS: [&str; 5] = [
    "abort_question",
    "ask_user_question",
    "get_answer",
    "review_next",
    "review_questions",
];

fn check_mcp_stdio(doc: &Value) -> Result<(), String> {
    let server = &doc["mcpServers"]["dshq"];
    let command = server["command"].as_str().ok_or("no command")?;
    if !command.ends_with("/dshq") {
        return Err(format!("the command {command} is not a dshq binary"));
    }
    let args: Vec<&str> = server["args"]
        .as_array()
        .ok_or("no args")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // As the host starts it: the binary by its path, the arguments, no shell; a home of its
    // own for the default root.
    let home = tempfile::tempdir().unwrap();
    let child = Command::new(bin())
        .args(&args)
        .env_clear()
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let answers = mcp_exchange(child, &initialize());
    if answers[0]["result"]["serverInfo"]["name"] != "dshq" || tool_names(&answers[1]) != TOOLS {
        return Err(format!("the server it starts answered {answers:?}"));
    }
    Ok(())
}

fn check_mcp_http(doc: &Value) -> Result<(), String> {
    let server = &doc["mcpServers"]["dshq"];
    let env = Env::new();
    // The placeholder in the header is the command that makes its token.
    let header = server["headers"]["Authorization"]
        .as_str()
        .ok_or("no Authorization header")?;
    let placeholder = regex::Regex::new(r"<dshq ([^>]+)>").unwrap();
    let words: Vec<String> = placeholder
        .captures(header)
        .ok_or("no <dshq ...> placeholder for the token")?[1]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let token = env.run(&words).ok().stdout.trim().to_string();
    let header = placeholder.replace(header, token.as_str()).into_owned();
    let port = crate::browser::free_port();
    let url = server["url"]
        .as_str()
        .ok_or("no url")?
        .replace("7465", &port.to_string());
    let _daemon = env.daemon_with(&["--listen", &port.to_string()], &[]);
    let out = Command::new("curl")
        .args(["-s", "-H", &format!("Authorization: {header}")])
        .args(["-H", "Content-Type: application/json"])
        .args(["-H", "Accept: application/json, text/event-stream"])
        .args(["-d", &initialize()[0].to_string(), &url])
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    let body = String::from_utf8_lossy(&out.stdout);
    if !body.contains(r#""serverInfo""#) || !body.contains(r#""name":"dshq""#) {
        return Err(format!("{url} answered {body}"));
    }
    Ok(())
}

#[test]
fn checked_blocks_are_what_they_say() {
    let mut failures = Vec::new();
    let mut n = 0;
    for b in all_blocks() {
        let at = format!("{}:{}", b.page, b.line);
        let text = b.body.join("\n") + "\n";
        let result: Result<(), String> = match &b.marker {
            Some(Marker::Check(kind)) => {
                n += 1;
                match kind.as_str() {
                    "request" | "config" => {
                        let name = if kind == "request" {
                            "block.json"
                        } else {
                            "block.toml"
                        };
                        let (_dir, path) = temp_file(&text, name);
                        let env = Env::new();
                        let path = path.to_str().unwrap();
                        let args: Vec<&str> = if kind == "request" {
                            vec!["validate", path]
                        } else {
                            vec!["config", "check", path]
                        };
                        let r = env.run(&args);
                        if r.code == 0 {
                            Ok(())
                        } else {
                            Err(format!("dshq {}: {}{}", args.join(" "), r.stdout, r.stderr))
                        }
                    }
                    "mcp-stdio-config" | "mcp-http-config" => {
                        match serde_json::from_str::<Value>(&text) {
                            Err(e) => Err(format!("not JSON: {e}")),
                            Ok(doc) if kind == "mcp-stdio-config" => check_mcp_stdio(&doc),
                            Ok(doc) => check_mcp_http(&doc),
                        }
                    }
                    other => Err(format!("no check {other}")),
                }
            }
            Some(Marker::SameAs(p)) => {
                n += 1;
                let file = fs::read_to_string(repo().join(p)).unwrap_or_default();
                if file.trim_end() == text.trim_end() {
                    Ok(())
                } else {
                    Err(format!("differs from {p}"))
                }
            }
            Some(Marker::Excerpt(p)) => {
                n += 1;
                let file = fs::read_to_string(repo().join(p)).unwrap_or_default();
                let lines: Vec<&str> = file.lines().map(str::trim).collect();
                match b
                    .body
                    .iter()
                    .find(|l| !l.trim().is_empty() && !lines.contains(&l.trim()))
                {
                    None => Ok(()),
                    Some(l) => Err(format!("{l:?} is not in {p}")),
                }
            }
            _ => continue,
        };
        if let Err(e) = result {
            failures.push(format!("{at}: {e}"));
        }
    }
    assert!(n >= 5, "{n} checked blocks");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_parser_finds_markers_sessions_and_steps() {
    let text =
        "intro\n<!-- run: s1 -->\n```console\n$ export X=1\n$ cat q.json \\\n  | wc -l\n1\n```\n\
                <!-- file: s1 ~/a.toml append -->\n```toml\nk = 1\n```\n\
                <!-- not-run: needs a thing this machine lacks -->\n```sh\nrm -rf /\n```\n\
                ```sh\nunmarked\n```\n<!-- tour:begin -->\n```console\n$ dshq list\n```\n\
                <!-- tour:end -->\n  <!-- check: config -->\n  ```toml\n  [slack.users]\n  ```\n";
    let b = blocks("p.md", text);
    assert_eq!(b.len(), 6);
    assert_eq!(
        b[0].marker,
        Some(Marker::Run {
            session: "s1".into(),
            postgres: false
        })
    );
    assert_eq!(
        b[1].marker,
        Some(Marker::File {
            session: "s1".into(),
            path: "~/a.toml".into(),
            append: true
        })
    );
    assert!(matches!(&b[2].marker, Some(Marker::NotRun(r)) if r.starts_with("needs")));
    assert_eq!(b[3].marker, None);
    assert!(matches!(&b[4].marker, Some(Marker::Run { session, .. }) if session == "tour"));
    assert!(matches!(&b[5].marker, Some(Marker::Check(k)) if k == "config"));
    assert_eq!(b[5].body, vec!["[slack.users]"]);
    let s = steps(&b[0].body);
    assert_eq!(s.len(), 2);
    assert_eq!(s[1].command, "cat q.json \\\n  | wc -l");
    assert_eq!(s[1].expected, vec!["1"]);
    let tour = blocks("README.md", text);
    assert!(tour.iter().any(|b| b.marker
        == Some(Marker::Run {
            session: "tour".into(),
            postgres: false
        })));
    // Comparing.
    let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(same_lines(
        &l(&["a", "...", "d"]),
        &l(&["a", "b", "c", "d"])
    ));
    assert!(same_lines(&l(&["a", "...", "d"]), &l(&["a", "d"])));
    assert!(!same_lines(&l(&["a", "...", "d"]), &l(&["a", "b"])));
    assert!(same_line("on ... hold it", "on vm:/x hold it"));
    assert!(!same_line("on ... hold it", "on vm:/x held it"));
    assert_eq!(
        normalize(r#"{"remindMs":1796408754897,"x":1}"#, "/x"),
        r#"{"remindMs":<ms>,"x":1}"#
    );
    assert_eq!(
        normalize(&format!("dshq_{}", "ab".repeat(32)), "/x"),
        "dshq_<64 hex digits>"
    );
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as
/// `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A page's text outside its fenced blocks.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[test]
fn every_link_of_the_docs_leads_somewhere() {
    let mut files: Vec<PathBuf> = vec![repo().join("README.md")];
    for dir in ["docs", "docs/guide"] {
        let mut more: Vec<PathBuf> = fs::read_dir(repo().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        more.sort();
        files.extend(more);
    }
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let heading = regex::Regex::new(r"(?m)^#+ (.*)$").unwrap();
    let mut broken = Vec::new();
    let mut n = 0;
    for f in &files {
        let text = prose(&fs::read_to_string(f).unwrap());
        for c in link.captures_iter(&text) {
            let target = &c[1];
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            n += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file = if path.is_empty() {
                f.clone()
            } else {
                f.parent().unwrap().join(path)
            };
            let name = f.strip_prefix(repo()).unwrap().display();
            if !file.exists() {
                broken.push(format!("{name}: {target}: no such file"));
                continue;
            }
            if !anchor.is_empty() && file.extension().is_some_and(|x| x == "md") {
                let headings = prose(&fs::read_to_string(&file).unwrap());
                if !heading
                    .captures_iter(&headings)
                    .any(|h| slug(&h[1]) == anchor)
                {
                    broken.push(format!("{name}: {target}: no such heading"));
                }
            }
        }
    }
    assert!(n > 50, "{n} links");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The README is the front door: short, the rest in the guide.
#[test]
fn the_readme_stays_a_short_front_door() {
    let text = fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: keep it at most 300, and move the detail to docs/guide/"
    );
}
