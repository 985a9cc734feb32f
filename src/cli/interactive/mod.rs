//! `dshq answer [ID]` on a terminal with no answer flags: the reviewer's screen.
//!
//! The session is the provider. It registers a lease for the context (or uses the one
//! given with `--lease`/`DSHQ_LEASE`), heartbeats it from a background thread with its
//! own connection every ttl/3, and releases it on every way out — done, Quit, an error,
//! Ctrl-C — like dsh's disposer: [`Session`] is a guard whose `Drop` releases. Ctrl-C at a
//! prompt is a key (the terminal is in raw mode), which the prompt returns as an
//! interruption and the session unwinds through that guard; Ctrl-C, SIGTERM or SIGHUP at
//! any other moment reaches a signal thread that restores the terminal, releases the
//! lease from its own connection and exits. Releasing is idempotent, so the two paths can
//! race harmlessly. Only SIGKILL escapes, and then the lease simply expires after its
//! ttl, returning its claims to `pending`.
//!
//! A screen nobody is at gives its own lease up after `--idle-release` without a key and
//! takes it back on the next key ([`idle`]); so the lease's token and row id can change
//! during a session, and every thread reads them from one shared state ([`lease`]).
//!
//! A terminal can also die under the session (its window closed, the ssh connection
//! dropped). The kernel then usually sends SIGHUP, handled as above; nothing on that path
//! may panic on the dead terminal (a failed `eprintln!` once killed the signal thread and
//! left the process running). And because crossterm's reader spins forever on a terminal
//! that only returns EOF or EIO, a watchdog thread polls the session's terminal for a
//! hang-up and ends the session the same way when no SIGHUP came (the process was not in
//! the terminal's session, or SIGHUP was ignored). Exit status 129 either way.
//!
//! With an id the session answers that request; without one it walks the context's
//! pending requests oldest first, claiming each as it shows it. A request left "for
//! later" stays claimed by the session until the lease is released at the end, so the
//! walk does not show it again; releasing returns it to `pending` for the next reviewer.
//! (With a lease of your own, it stays claimed until you release that lease.)
//!
//! The screen itself is in [`screen`]; this module only connects it to the store.

pub mod follow;
pub mod idle;
pub mod input;
pub mod keys;
pub mod lease;
pub mod markdown;
pub mod screen;
pub mod style;
pub mod tty;
pub mod wrap;

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{default_provider_name, Ctx};
use crate::app::{self, provide::Acting};
use crate::clock::{human_ms, now_ms};
use crate::error::{Error, Result};
use crate::output::{age, outcome_text};
use crate::protocol::{Answer, Outcome};
use crate::root::Root;
use crate::store::{RequestRow, Store};

use idle::{Ended, Presence};
use keys::Got;
use lease::Held;
use screen::{Prompter, Reply, RequestEnd, Stop};
use style::Style;
use wrap::{Paint, Word};

/// What the interactive session needs from the command line.
#[derive(Debug, Clone)]
pub struct Opts {
    /// Answer this request; `None` walks the context's pending requests.
    pub id: Option<String>,
    /// The context to walk (default: the given lease's, else `default`).
    pub context: Option<String>,
    /// A lease to use instead of registering one (it is heartbeated, never released).
    pub lease: Option<String>,
    /// The provider name for the session's lease (default `$USER`).
    pub name: Option<String>,
    /// The session lease's ttl; it is heartbeated every ttl/3.
    pub ttl: Duration,
    /// How to paint.
    pub style: Style,
    /// Without an id: when the queue is empty, wait for more instead of ending.
    pub follow: bool,
    /// Without an id: take only the requests these filters match (`--agent`, `--intent`,
    /// `--grep`), in the walk and while it follows.
    pub only: crate::store::ListFilter,
    /// Release the session's own lease after this long without a key; the next key takes
    /// it back ([`idle`]). A lease given with `--lease` is never released.
    pub idle_release: Duration,
}

/// Whether an interactive session can run here: stdin, stdout and stderr (where the
/// prompts draw) are all terminals.
pub fn available() -> bool {
    std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal()
}

/// The provider session: the lease, its heartbeat thread and the signal thread. Dropping
/// it stops both threads and releases the lease.
pub struct Session {
    held: Arc<Held>,
    /// The idle watch (every prompt reads its keys through it).
    pub presence: Arc<Presence>,
    /// The context the lease answers for.
    pub context: String,
    /// The provider name.
    pub name: String,
    heartbeat: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
    lost: Arc<Mutex<Option<String>>>,
    signals: Option<signal_hook::iterator::Handle>,
    /// Set to stop the terminal watchdog.
    watchdog: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl Session {
    /// Register a lease in `context` (or authenticate `given`), then start heartbeating
    /// and catching signals.
    pub fn start(
        root: &Root,
        store: &mut Store,
        context: &str,
        given: Option<&str>,
        name: &str,
        ttl: Duration,
        idle_release: Duration,
    ) -> Result<Session> {
        let app::session::Session {
            token,
            lease,
            owned,
        } = app::session::Session::start(store, context, given, name, ttl)?;
        let held = Arc::new(Held::new(
            root,
            token,
            lease.lease_id,
            owned,
            &lease.context,
            &lease.name,
            ttl,
        ));
        let presence = Arc::new(Presence::new(held.clone(), idle_release));
        let mut session = Session {
            held,
            presence,
            context: lease.context.clone(),
            name: lease.name.clone(),
            heartbeat: None,
            lost: Arc::new(Mutex::new(None)),
            signals: None,
            watchdog: None,
        };
        // From here on, any failure drops `session`, which releases the lease.
        // Quiet before the signal thread exists: a signal then always finds the mode to
        // restore.
        tty::hold();
        session.signals = Some(session.catch_signals()?);
        session.watchdog = Some(session.watch_terminal()?);
        session.heartbeat =
            Some(session.start_heartbeat(root, Duration::from_millis(lease.ttl_ms.max(3) as u64))?);
        Ok(session)
    }

    /// The lease token now (a lease taken back after an idle release has a new one).
    pub fn token(&self) -> String {
        self.held.token()
    }

    /// The lease's row id now (its own claims are part of the walk).
    pub fn lease_id(&self) -> i64 {
        self.held.lease_id()
    }

    /// Whether the session registered its lease (and releases it at the end).
    pub fn owned(&self) -> bool {
        self.held.owned()
    }

    /// Why the heartbeat failed, if it did.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn start_heartbeat(
        &self,
        root: &Root,
        ttl: Duration,
    ) -> Result<(mpsc::Sender<()>, JoinHandle<()>)> {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let every = ttl / 3;
        let root = root.clone();
        let held = self.held.clone();
        let lost = self.lost.clone();
        let handle = std::thread::Builder::new()
            .name("dshq-heartbeat".into())
            .spawn(move || {
                let mut store = match root.open_store() {
                    Ok(s) => s,
                    Err(e) => {
                        *lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                        return;
                    }
                };
                loop {
                    match stop_rx.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => {
                            // Nothing while the lease is released for idleness.
                            if let Err(e) = held.heartbeat(&mut store) {
                                let fatal = matches!(e, Error::LeaseExpired(_));
                                *lost.lock().unwrap_or_else(|e| e.into_inner()) =
                                    Some(e.to_string());
                                if fatal {
                                    return;
                                }
                            }
                        }
                        // Stopped, or the session is gone.
                        _ => return,
                    }
                }
            })
            .map_err(|e| Error::io("heartbeat thread", e))?;
        Ok((stop_tx, handle))
    }

    fn catch_signals(&self) -> Result<signal_hook::iterator::Handle> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            .map_err(|e| Error::io("signal handler", e))?;
        let handle = signals.handle();
        let held = self.held.clone();
        std::thread::Builder::new()
            .name("dshq-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    end_process(&held, sig, "interrupted");
                }
            })
            .map_err(|e| Error::io("signal thread", e))?;
        Ok(handle)
    }

    /// Start the watchdog that ends the session when its terminal hangs up.
    fn watch_terminal(&self) -> Result<Arc<std::sync::atomic::AtomicBool>> {
        use std::sync::atomic::Ordering;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let held = self.held.clone();
        let stopped = stop.clone();
        std::thread::Builder::new()
            .name("dshq-terminal".into())
            .spawn(move || {
                while !stopped.load(Ordering::SeqCst) {
                    if terminal_hung_up(Duration::from_millis(250)) {
                        if stopped.load(Ordering::SeqCst) {
                            return;
                        }
                        // No `tracing` here: with stderr gone, tracing-subscriber's
                        // report of the failed write panics this thread.
                        end_process(&held, signal_hook::consts::SIGHUP, "terminal closed");
                    }
                }
            })
            .map_err(|e| Error::io("terminal watchdog thread", e))?;
        Ok(stop)
    }

    /// Stop the threads and release the lease, reporting a failure to release.
    pub fn end(mut self) -> Result<bool> {
        self.stop_threads();
        tty::restore();
        self.held.release()
    }

    fn stop_threads(&mut self) {
        if let Some((stop, handle)) = self.heartbeat.take() {
            let _ = stop.send(());
            let _ = handle.join();
        }
        if let Some(h) = self.signals.take() {
            h.close();
        }
        if let Some(w) = self.watchdog.take() {
            w.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop_threads();
        tty::restore();
        if let Err(e) = self.held.release() {
            note(&format!("error: could not release the provider lease: {e}"));
        }
    }
}

/// Write a line to stderr without panicking: the terminal may be gone.
fn note(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
    let _ = err.flush();
}

/// End the process from another thread (a signal, a dead terminal): restore the
/// terminal, release the lease, say so where it can be seen, exit with `128 + sig`.
/// Nothing here may panic: the terminal may be gone.
fn end_process(held: &Held, sig: i32, why: &str) -> ! {
    restore_terminal();
    let tail = match held.release() {
        Ok(true) => "; lease released".to_string(),
        Ok(false) => String::new(),
        Err(e) => format!("; could not release the lease: {e}"),
    };
    note(&format!("\n{why}{tail}"));
    std::process::exit(128 + sig);
}

/// Whether the session's terminal (stdin, where keys are read, or stderr, where the
/// screen is drawn) has hung up; waits up to `wait` for that. Asks `poll(2)` for no
/// events, so only a hang-up, an error or a closed descriptor is reported: pending keys
/// neither wake it nor are consumed.
fn terminal_hung_up(wait: Duration) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use std::os::fd::AsFd;
    let (stdin, stderr) = (std::io::stdin(), std::io::stderr());
    let mut fds = [
        PollFd::new(&stdin, PollFlags::empty()),
        PollFd::from_borrowed_fd(stderr.as_fd(), PollFlags::empty()),
    ];
    let timeout = Timespec::try_from(wait).unwrap_or(Timespec {
        tv_sec: i64::MAX,
        tv_nsec: 0,
    });
    match poll(&mut fds, Some(&timeout)) {
        Ok(0) => false,
        Ok(_) => fds.iter().any(|p| {
            p.revents()
                .intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL)
        }),
        // EINTR: a signal; poll again.
        Err(rustix::io::Errno::INTR) => false,
        // Anything else: do not spin.
        Err(_) => {
            std::thread::sleep(wait);
            false
        }
    }
}

/// Put the terminal back as a shell expects it (raw mode off, cursor shown, main screen)
/// and clear what is left of an interrupted prompt below the cursor.
fn restore_terminal() {
    use crossterm::{cursor, terminal};
    let _ = terminal::disable_raw_mode();
    tty::restore();
    let mut err = std::io::stderr();
    if markdown::in_pager() {
        let _ = crossterm::execute!(err, terminal::LeaveAlternateScreen);
    }
    let _ = crossterm::execute!(
        err,
        cursor::Show,
        cursor::MoveToColumn(0),
        terminal::Clear(terminal::ClearType::FromCursorDown)
    );
    let _ = err.flush();
}

/// The real terminal: the prompts of [`keys`] on stderr, every key read through the
/// session's idle watch.
pub struct Terminal {
    style: Style,
    /// The asking agent's context for the request on screen (see [`context_lines`]).
    context: Vec<String>,
    /// The idle watch.
    presence: Arc<Presence>,
}

impl Terminal {
    fn page_size(&self, n: usize) -> usize {
        let (_, rows) = markdown::terminal_size();
        n.min(rows.saturating_sub(7).max(5)).max(1)
    }

    fn idle(&self) -> Option<&dyn keys::Idle> {
        Some(&*self.presence)
    }
}

/// A prompt's result as the screen takes it; action keys are the caller's to offer.
fn reply<T>(r: std::io::Result<Got<T>>) -> std::result::Result<Reply<T>, Stop> {
    match r {
        Ok(Got::Value(v)) => Ok(Reply::Value(v)),
        Ok(Got::Esc | Got::Action(_)) => Ok(Reply::Esc),
        Ok(Got::Interrupted) => Err(Stop::Interrupted),
        Ok(Got::Ended) => Err(Stop::Ended),
        Err(e) => Err(Stop::Terminal(e.to_string())),
    }
}

impl Prompter for Terminal {
    fn style(&self) -> Style {
        self.style
    }

    fn size(&self) -> (usize, usize) {
        markdown::terminal_size()
    }

    fn say(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
        let _ = err.flush();
    }

    fn select(
        &mut self,
        message: &str,
        items: &[String],
        help: &str,
        start: usize,
    ) -> std::result::Result<Reply<usize>, Stop> {
        Ok(match self.keyed(message, items, help, start, "")? {
            screen::Keyed::Pick(k) => Reply::Value(k),
            _ => Reply::Esc,
        })
    }

    fn keyed(
        &mut self,
        message: &str,
        items: &[String],
        help: &str,
        start: usize,
        actions: &str,
    ) -> std::result::Result<screen::Keyed, Stop> {
        let page = self.page_size(items.len());
        let got = keys::select(
            message,
            items,
            help,
            start,
            actions,
            page,
            &self.style,
            self.idle(),
        );
        match got {
            Ok(Got::Value(k)) => Ok(screen::Keyed::Pick(k)),
            Ok(Got::Esc) => Ok(screen::Keyed::Esc),
            Ok(Got::Action(c)) => Ok(screen::Keyed::Action(c)),
            Ok(Got::Interrupted) => Err(Stop::Interrupted),
            Ok(Got::Ended) => Err(Stop::Ended),
            Err(e) => Err(Stop::Terminal(e.to_string())),
        }
    }

    fn edit(&mut self, initial: &str) -> std::result::Result<Option<String>, Stop> {
        let text = keys::edit(initial);
        // Time in the editor is the reviewer at work, not away.
        self.presence.touch();
        match text {
            Ok(text) => Ok(text),
            Err(e) => {
                let style = self.style;
                self.say(&style.warn(&style::one_line(&format!("the editor failed: {e}"))));
                Ok(None)
            }
        }
    }

    fn context(&mut self) -> std::result::Result<(), Stop> {
        // Wrapped at words to the width, so a long meta value is shown whole.
        let width = self.size().0.saturating_sub(1).max(20);
        let style = self.style;
        let lines: Vec<String> = self
            .context
            .iter()
            .flat_map(|l| wrap::keep_indent(l, width, &style))
            .collect();
        self.pager("The asking agent's context", &lines)
    }

    fn multi(
        &mut self,
        message: &str,
        items: &[String],
        help: &str,
        defaults: &[usize],
    ) -> std::result::Result<Reply<Vec<usize>>, Stop> {
        Ok(
            match self.multi_keyed(message, items, help, defaults, "")? {
                screen::MultiKeyed::Ticked(v) => Reply::Value(v),
                _ => Reply::Esc,
            },
        )
    }

    fn multi_keyed(
        &mut self,
        message: &str,
        items: &[String],
        help: &str,
        defaults: &[usize],
        actions: &str,
    ) -> std::result::Result<screen::MultiKeyed, Stop> {
        let page = self.page_size(items.len());
        let mut ticked = defaults.to_vec();
        let got = keys::multi(
            message,
            items,
            help,
            &mut ticked,
            actions,
            page,
            &self.style,
            self.idle(),
        );
        match got {
            Ok(Got::Value(v)) => Ok(screen::MultiKeyed::Ticked(v)),
            Ok(Got::Esc) => Ok(screen::MultiKeyed::Esc),
            Ok(Got::Action(c)) => Ok(screen::MultiKeyed::Action(c, ticked)),
            Ok(Got::Interrupted) => Err(Stop::Interrupted),
            Ok(Got::Ended) => Err(Stop::Ended),
            Err(e) => Err(Stop::Terminal(e.to_string())),
        }
    }

    fn text(
        &mut self,
        message: &str,
        initial: &str,
        help: &str,
    ) -> std::result::Result<Reply<String>, Stop> {
        reply(keys::line(
            message,
            initial,
            help,
            &self.style,
            self.idle(),
            &|_| None,
        ))
    }

    fn confirm(&mut self, message: &str, help: &str) -> std::result::Result<Reply<bool>, Stop> {
        reply(keys::confirm(message, help, &self.style, self.idle()))
    }

    fn pager(&mut self, title: &str, lines: &[String]) -> std::result::Result<(), Stop> {
        match markdown::page(title, lines, &self.style, self.idle()) {
            Ok(markdown::PagerEnd::Done) => Ok(()),
            Ok(markdown::PagerEnd::Interrupted) => Err(Stop::Interrupted),
            Ok(markdown::PagerEnd::Ended) => Err(Stop::Ended),
            Err(e) => Err(Stop::Terminal(e.to_string())),
        }
    }
}

/// Claim `id` for the session's lease.
fn claim(store: &mut Store, token: &str, id: &str) -> Result<RequestRow> {
    app::provide::claim(store, token, id)
}

/// The lines that introduce a request.
fn request_header(row: &RequestRow, at: Option<(usize, usize)>, style: &Style) -> String {
    let now = now_ms();
    let id = row.id.as_deref().unwrap_or("-");
    let req = row.request();
    let n = req.as_ref().map_or(0, |r| r.questions.len());
    let mut facts = vec![
        format!("context {}", style::one_line(&row.context)),
        format!("{n} question{}", if n == 1 { "" } else { "s" }),
        format!("asked {}", age(row.created_ms, now)),
    ];
    if let Some(a) = &row.agent_id {
        facts.push(format!("by agent {}", style::one_line(a)));
    }
    if let Some(d) = row.deadline_ms {
        facts.push(format!(
            "deadline in {}",
            human_ms(((d - now) / 1000).max(0) * 1000)
        ));
    }
    if let Some((k, n)) = at {
        facts.insert(0, format!("{k} of {n}"));
    }
    let width = markdown::terminal_size().0.saturating_sub(1).max(20);
    let mut title = Word::new("━━ Request ", Paint::Heading);
    title.push(&style::one_line(id), Paint::Accent);
    let mut units = vec![title];
    units.extend(facts.iter().map(|f| Word::new(f, Paint::Dim)));
    let mut s = format!(
        "\n{}",
        wrap::joined(units, " · ", 3, width, style).join("\n")
    );
    if let Some(meta) = req.and_then(|r| r.meta) {
        // One line, cut to the width: the whole meta is one key away (i).
        let json = serde_json::Value::Object(meta).to_string();
        let room = width
            .saturating_sub(3 + "meta ".len() + " (i: whole)".len())
            .max(10);
        let shown = crate::output::ellipsize(&json, room);
        let whole = if crate::text::one_line(&json).chars().count() > room {
            " (i: whole)"
        } else {
            ""
        };
        s.push_str(&format!(
            "\n   {}",
            style.dim(&format!("meta {shown}{whole}"))
        ));
    }
    s
}

/// The context pane of a request: its whole meta pretty-printed (every line escaped,
/// nothing cut), the links in it shown whole, the asking agent and its lineage, and that
/// agent's last questions with their answers.
fn context_lines(store: &mut Store, row: &RequestRow, style: &Style) -> Vec<String> {
    let mut out = vec![
        style.heading(&format!(
            "Request {}",
            style::one_line(row.id.as_deref().unwrap_or("-"))
        )),
        format!("context   {}", style::one_line(&row.context)),
        format!(
            "agent     {}{}",
            row.agent_id
                .as_deref()
                .map_or("(none)".into(), style::one_line),
            row.agent_instance
                .as_deref()
                .map_or(String::new(), |i| format!(
                    " (instance {})",
                    style::one_line(i)
                ))
        ),
        format!(
            "lineage   {}",
            row.agent_lineage
                .as_deref()
                .map_or("(none)".into(), style::one_line)
        ),
        format!("source    {}", style::one_line(&row.source)),
        String::new(),
        style.heading("meta"),
    ];
    let meta = row.request().and_then(|r| r.meta);
    match &meta {
        Some(m) => {
            let pretty = serde_json::to_string_pretty(m).unwrap_or_default();
            out.extend(pretty.lines().map(style::one_line));
            let mut links = Vec::new();
            collect_links(&serde_json::Value::Object(m.clone()), &mut links);
            if !links.is_empty() {
                out.push(String::new());
                out.push(style.heading("links"));
                out.extend(links.iter().map(|l| style::one_line(l)));
            }
        }
        None => out.push(style.dim("(no meta)")),
    }
    if let Some(agent) = &row.agent_id {
        out.push(String::new());
        out.push(style.heading("this agent's last questions"));
        match app::feed::agent_recent(store, agent, 6) {
            Ok(rows) => {
                for h in rows.iter().filter(|h| h.id != row.id).take(5) {
                    out.push(format!(
                        "{}  {}  {}{}",
                        style::one_line(&h.created_at),
                        style::one_line(h.id.as_deref().unwrap_or("-")),
                        h.status.as_str(),
                        h.provider
                            .as_deref()
                            .map_or(String::new(), |p| format!(" by {}", style::one_line(p)))
                    ));
                    for q in &h.questions {
                        let mut a: Vec<String> = q
                            .selected
                            .iter()
                            .flatten()
                            .map(|l| style::one_line(l))
                            .collect();
                        if let Some(c) = &q.custom {
                            a.push(format!("“{}”", style::one_line(c)));
                        }
                        out.push(format!(
                            "    Q {}\n    A {}",
                            style::one_line(&q.question),
                            if a.is_empty() {
                                "-".into()
                            } else {
                                a.join(", ")
                            }
                        ));
                    }
                }
            }
            Err(e) => out.push(style.warn(&style::one_line(&format!("cannot read: {e}")))),
        }
    }
    out.into_iter()
        .flat_map(|l| l.split('\n').map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// Every string in `v` that looks like a link (`http://`, `https://`, `file://`).
fn collect_links(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s)
            if ["http://", "https://", "file://"]
                .iter()
                .any(|p| s.starts_with(p)) =>
        {
            out.push(s.clone())
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_links(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| collect_links(x, out)),
        _ => {}
    }
}

/// Counts for the closing line.
#[derive(Default)]
struct Tally {
    answered: usize,
    cancelled: usize,
    later: usize,
}

enum Next {
    Continue,
    Quit,
}

/// Show one claimed request and carry out the reviewer's ending.
fn handle_request(
    ctx: &Ctx,
    store: &mut Store,
    session: &Session,
    term: &mut Terminal,
    row: &RequestRow,
    at: Option<(usize, usize)>,
    tally: &mut Tally,
) -> std::result::Result<Next, HandleError> {
    let style = term.style;
    let id = row.id.clone().expect("accepted requests have ids");
    let Some(request) = row.request() else {
        return Ok(Next::Continue);
    };
    term.say(&request_header(row, at, &style));
    term.context = context_lines(store, row, &style);
    // The idle watch claims this request again when it takes the lease back.
    session.presence.showing(Some(&id));
    let end = screen::review(term, &request.questions);
    session.presence.showing(None);
    let end = match end {
        Ok(end) => end,
        Err(Stop::Ended) => return ended(session, term),
        Err(stop) => return Err(HandleError::Stop(stop)),
    };
    let token = session.token();
    let result = match &end {
        RequestEnd::Answer(answer) => match submit(ctx, store, &token, &id, answer) {
            Ok(app::provide::Answering::Finished(f)) => Some(Ok(*f)),
            // A vote on a request with a quorum that left it open: said, and on to the next.
            Ok(app::provide::Answering::Voted(v)) => {
                tally.answered += 1;
                term.say(&style.dim(&style::one_line(&crate::output::voted_text(&v))));
                return Ok(Next::Continue);
            }
            Err(e) => Some(Err(e)),
        },
        RequestEnd::Cancel(reason) => Some(app::provide::cancel(
            store,
            Some(&ctx.root),
            &id,
            &Acting::Lease(token.clone()),
            reason.as_deref(),
        )),
        RequestEnd::Later => {
            tally.later += 1;
            term.say(&style.dim(&format!("left {id} for later")));
            None
        }
        RequestEnd::Quit => return Ok(Next::Quit),
    };
    if let Some(result) = result {
        match result {
            Ok(app::Finished {
                outcome,
                file_pending,
            }) => {
                // The commit is the answer: an outcome file that cannot be written now stays
                // pending for the daemon (as with `dshq answer`), and the session goes on.
                if let Some(e) = file_pending {
                    term.say(&style.warn(&style::one_line(&format!(
                        "{id} is recorded, but its outcome file could not be written ({e}); \
                         it stays pending and the daemon writes it"
                    ))));
                }
                match &outcome {
                    Outcome::Answered(_) => tally.answered += 1,
                    Outcome::Error(_) => tally.cancelled += 1,
                }
                let text = outcome_text(&outcome);
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{}", style.ok(&text));
                let _ = out.flush();
            }
            // The request ended meanwhile (the asker aborted it, its deadline passed).
            Err(e @ (Error::RequestFinal { .. } | Error::NotFound(_))) => {
                term.say(&style.warn(&style::one_line(&format!("{id}: {e}; nothing was changed"))));
            }
            Err(e) => return Err(HandleError::Fail(e)),
        }
    }
    Ok(Next::Continue)
}

/// The idle watch ended a step: go on to the next request when only the one on screen
/// ended meanwhile; end the session when the lease could not be taken back.
fn ended(session: &Session, term: &mut Terminal) -> std::result::Result<Next, HandleError> {
    let style = term.style;
    match session.presence.take_ended() {
        Some(Ended::Gone { id, error }) => {
            term.say(&style.warn(&style::one_line(&format!(
                "lease taken back, but {id} ended while it was released ({error}); nothing was sent"
            ))));
            Ok(Next::Continue)
        }
        Some(Ended::Lost(e)) => Err(HandleError::Fail(e)),
        None => Err(HandleError::Stop(Stop::Terminal(
            "the session ended without a reason".into(),
        ))),
    }
}

/// Answer with the session's lease; the outcome is published by the use-case.
fn submit(
    ctx: &Ctx,
    store: &mut Store,
    token: &str,
    id: &str,
    answer: &Answer,
) -> Result<app::provide::Answering> {
    let who = Acting::Lease(token.to_string());
    app::provide::answer(store, Some(&ctx.root), id, &who, answer)
}

enum HandleError {
    Stop(Stop),
    Fail(Error),
}

/// Walk the session's context: the queue in [`follow::Queue`]'s order, claiming each
/// request as it is shown; at the end, stop, or with `follow` wait for more.
fn walk(
    ctx: &Ctx,
    store: &mut Store,
    session: &Session,
    term: &mut Terminal,
    follow: bool,
    only: &crate::store::ListFilter,
    tally: &mut Tally,
) -> std::result::Result<(), HandleError> {
    let style = term.style;
    let mut queue = follow::Queue::only(only.clone());
    let wake = follow.then(|| follow::Wake::on(ctx.root.dir()));
    let mut idle = false;
    // Whether the bell rang for a request that arrived while the lease was released.
    let mut rang = false;
    loop {
        if let Some(why) = session.lost() {
            return Err(HandleError::Fail(Error::LeaseExpired(why)));
        }
        // Released for idleness while waiting: nothing is claimed until a key is pressed.
        if session.presence.away() {
            away(store, session, term, &queue, &mut rang)?;
            continue;
        }
        let Some(next) = queue
            .next(store, &session.context, session.lease_id())
            .map_err(HandleError::Fail)?
        else {
            let Some(wake) = &wake else {
                term.say(&format!(
                    "no more pending requests in context {}{}",
                    session.context,
                    queue.matching()
                ));
                return Ok(());
            };
            if !idle {
                idle = true;
                term.say(&style.dim(&format!(
                    "waiting for new requests in context {}{} · Ctrl-C: stop",
                    session.context,
                    queue.matching()
                )));
            }
            // No key is asked for while waiting, so the idle time runs on here.
            if session.presence.check() {
                if let Some(note) = keys::Idle::note(&*session.presence) {
                    term.say(&style.warn(&note));
                }
                continue;
            }
            wake.wait();
            continue;
        };
        if idle {
            idle = false;
            // Rung already when it arrived while the lease was released.
            if !rang {
                follow::bell();
            }
        }
        rang = false;
        let id = next.row.id.clone().unwrap_or_default();
        let row = match claim(store, &session.token(), &id) {
            Ok(row) => row,
            // Taken or ended between the read and the claim: move on.
            Err(
                Error::RequestFinal { .. } | Error::ClaimedElsewhere { .. } | Error::NotFound(_),
            ) => {
                queue.not_shown();
                continue;
            }
            Err(e) => return Err(HandleError::Fail(e)),
        };
        let at = Some((next.position, next.total));
        if let Next::Quit = handle_request(ctx, store, session, term, &row, at, tally)? {
            return Ok(());
        }
        if let Some(wake) = &wake {
            wake.drain();
        }
    }
}

/// The follow loop's wait while the lease is released for idleness: wait for the
/// reviewer's key (which takes the lease back), ringing the bell once when a request
/// arrives meanwhile. Ctrl-C here is a key (raw mode), so it ends the session as Ctrl-C
/// at a prompt does.
fn away(
    store: &mut Store,
    session: &Session,
    term: &mut Terminal,
    queue: &follow::Queue,
    rang: &mut bool,
) -> std::result::Result<(), HandleError> {
    let style = term.style;
    let got = keys::key_within(follow::TICK, &*session.presence)
        .map_err(|e| HandleError::Stop(Stop::Terminal(e.to_string())))?;
    match got {
        Some(Got::Interrupted) => Err(HandleError::Stop(Stop::Interrupted)),
        Some(Got::Ended) => ended(session, term).map(|_| ()),
        Some(_) => {
            session.presence.clear_note();
            term.say(&style.dim("lease taken back"));
            Ok(())
        }
        None => {
            let waiting = queue
                .waiting(store, &session.context, session.lease_id())
                .map_err(HandleError::Fail)?;
            if waiting > 0 && !*rang {
                *rang = true;
                follow::bell();
                term.say(&style.warn(&format!(
                    "{waiting} new request{} waiting · press any key to take the lease back",
                    if waiting == 1 { "" } else { "s" }
                )));
            }
            Ok(())
        }
    }
}

/// Run the interactive session.
pub fn run(ctx: &Ctx, opts: Opts) -> Result<()> {
    let mut store = ctx.store()?;
    let store = &mut store;
    let given = opts.lease.as_deref().filter(|l| !l.trim().is_empty());
    let context = session_context(store, &opts, given)?;
    let name = opts.name.clone().unwrap_or_else(default_provider_name);
    let session = Session::start(
        &ctx.root,
        store,
        &context,
        given,
        &name,
        opts.ttl,
        opts.idle_release,
    )?;
    if let Some(c) = &opts.context {
        if *c != session.context {
            return Err(Error::Usage(format!(
                "the lease answers for context {:?}, not {c:?}",
                session.context
            )));
        }
    }
    let style = opts.style;
    let mut term = Terminal {
        style,
        context: Vec::new(),
        presence: session.presence.clone(),
    };
    say_intro(&mut term, &session, &opts);
    let mut tally = Tally::default();
    let result = (|| -> std::result::Result<(), HandleError> {
        match &opts.id {
            Some(id) => {
                let row = claim(store, &session.token(), id).map_err(HandleError::Fail)?;
                handle_request(ctx, store, &session, &mut term, &row, None, &mut tally)?;
            }
            None => walk(
                ctx,
                store,
                &session,
                &mut term,
                opts.follow,
                &opts.only,
                &mut tally,
            )?,
        }
        Ok(())
    })();
    end_session(session, &mut term, &tally, result)
}

/// The context the session answers in, resolved before a lease is taken: the request's
/// when an id is given (which must be open), else the one asked for, else the given
/// lease's, else the default.
fn session_context(store: &mut Store, opts: &Opts, given: Option<&str>) -> Result<String> {
    let first = match &opts.id {
        Some(id) => {
            let row = store.get(id)?.ok_or_else(|| Error::NotFound(id.clone()))?;
            if row.status.is_final() {
                return Err(Error::RequestFinal {
                    id: id.clone(),
                    status: row.status.as_str().into(),
                });
            }
            Some(row)
        }
        None => None,
    };
    let context = match (&first, &opts.context, given) {
        (Some(row), _, _) => row.context.clone(),
        (None, Some(c), _) => c.clone(),
        (None, None, Some(token)) => store.authenticate(token)?.context,
        (None, None, None) => crate::protocol::DEFAULT_CONTEXT.to_string(),
    };
    Ok(context)
}

/// The session's first line: who answers where, the idle release, the keys.
fn say_intro(term: &mut Terminal, session: &Session, opts: &Opts) {
    let style = opts.style;
    let idle_note = session.owned().then(|| {
        format!(
            "idle release after {}",
            humantime::format_duration(opts.idle_release)
        )
    });
    let mut intro = vec![format!(
        "answering as {} in context {}",
        style::one_line(&session.name),
        style::one_line(&session.context)
    )];
    intro.extend(idle_note);
    intro.push("keys: 1-9 pick, e editor, s skip, l later, i context, q quit, Esc more".into());
    intro.push("Ctrl-C: stop".into());
    let width = term.size().0.saturating_sub(1).max(20);
    term.say(&wrap::parts(&intro, " · ", width, wrap::Paint::Dim, &style).join("\n"));
}

/// End the session as its walk ended: release what it owns and say what it did, or
/// return why it stopped (an interrupt releases the lease and exits 130).
fn end_session(
    session: Session,
    term: &mut Terminal,
    tally: &Tally,
    result: std::result::Result<(), HandleError>,
) -> Result<()> {
    let style = term.style;
    match result {
        Ok(()) => {
            let owned = session.owned();
            session.end()?;
            let mut parts = vec![format!("answered {}", tally.answered)];
            if tally.cancelled > 0 {
                parts.push(format!("cancelled {}", tally.cancelled));
            }
            if tally.later > 0 {
                parts.push(format!("left {} for later", tally.later));
            }
            if owned {
                parts.push("lease released".into());
            }
            term.say(&style.dim(&parts.join("; ")));
            Ok(())
        }
        Err(HandleError::Fail(e)) => {
            drop(session);
            Err(e)
        }
        Err(HandleError::Stop(Stop::Terminal(msg))) => {
            drop(session);
            Err(Error::io("terminal", std::io::Error::other(msg)))
        }
        Err(HandleError::Stop(Stop::Ended)) => {
            let why = session.presence.take_ended();
            drop(session);
            Err(match why {
                Some(Ended::Lost(e)) => e,
                Some(Ended::Gone { error, .. }) => error,
                None => Error::io("terminal", std::io::Error::other("the session ended")),
            })
        }
        Err(HandleError::Stop(Stop::Interrupted)) => {
            let owned = session.owned();
            let released = session.end();
            restore_terminal();
            match released {
                Ok(_) if owned => note("interrupted; lease released"),
                Ok(_) => note("interrupted"),
                Err(e) => note(&format!("interrupted; could not release the lease: {e}")),
            }
            std::process::exit(130);
        }
    }
}
