//! Which process is Claude Code, and whether it still runs: the resumer must start
//! `claude -p --resume` only once the run that deferred has exited (a session still being
//! written must not be resumed twice at once).
//!
//! Claude Code runs a command hook through a shell (`sh -c "dshq claude-code hook ..."`),
//! so the hook's parent may be that shell, which exits with the hook, long before Claude
//! Code itself. The run that deferred is the nearest ancestor that is not a shell (or one
//! of the small wrappers a settings file may put in front: `env`, `nice`, `timeout`, ...).
//! Linux's `/proc/PID/stat` gives each ancestor's name, parent and start time; the start
//! time tells the process from a later one that reused its pid. Elsewhere, with no
//! `/proc`, the parent is taken, as before.

use std::time::Duration;

/// Programs that stand between Claude Code and the hook without being Claude Code.
const BETWEEN: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish", "env", "nice", "nohup",
    "timeout", "setsid", "stdbuf", "time",
];

/// How far up the ancestry to look.
const MAX_DEPTH: usize = 8;

/// A process as `/proc/PID/stat` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    /// Its pid.
    pub pid: u32,
    /// Its name (`comm`).
    pub name: String,
    /// Its parent's pid.
    pub ppid: u32,
    /// When it started (clock ticks since boot): the same pid later is another process.
    pub started: u64,
}

/// Parse the text of `/proc/PID/stat` (`pid (comm) state ppid ... starttime ...`; the
/// name may hold spaces and parentheses, so it ends at the last `)`).
pub fn parse_stat(text: &str) -> Option<Proc> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let name = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // After the name: state (0), ppid (1), ..., starttime is field 22 of the whole line,
    // the 20th after the name.
    let ppid = rest.get(1)?.parse().ok()?;
    let started = rest.get(19)?.parse().ok()?;
    Some(Proc {
        pid,
        name,
        ppid,
        started,
    })
}

/// Process `pid`, if it runs (and `/proc` tells).
pub fn read(pid: u32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// The run that started this hook: the nearest ancestor that is no shell or wrapper
/// ([`BETWEEN`]); the parent when `/proc` cannot tell.
pub fn claude_code() -> u32 {
    let parent = std::os::unix::process::parent_id();
    let mut pid = parent;
    for _ in 0..MAX_DEPTH {
        let Some(p) = read(pid) else {
            return parent;
        };
        if !BETWEEN.contains(&p.name.as_str()) || p.ppid <= 1 {
            return pid;
        }
        pid = p.ppid;
    }
    parent
}

/// Whether process `pid` still runs (and, when `started` is known, is still the process
/// that started then, not a later one with its pid).
pub fn alive(pid: u32, started: Option<u64>) -> bool {
    if let (Some(p), Some(s)) = (read(pid), started) {
        return p.started == s;
    }
    crate::sys::process_exists(pid)
}

/// Wait until process `pid` (that started at `started`, when known) has exited.
pub fn wait_gone(pid: u32, started: Option<u64>) {
    while alive(pid, started) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_parses_whatever_the_name_holds() {
        let line = "4242 (my (odd) prog) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200";
        assert_eq!(
            parse_stat(line),
            Some(Proc {
                pid: 4242,
                name: "my (odd) prog".into(),
                ppid: 17,
                started: 987654,
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        // This process: its own stat reads, and its parent is alive.
        let me = read(std::process::id()).expect("/proc on Linux");
        assert_eq!(me.pid, std::process::id());
        assert!(alive(me.pid, Some(me.started)));
        assert!(!alive(me.pid, Some(me.started + 1)));
    }
}
