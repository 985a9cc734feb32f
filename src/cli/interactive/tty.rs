//! The terminal's mode between prompts, for as long as a review session runs.
//!
//! Each prompt puts the terminal in raw mode while it reads and restores the mode it
//! found when it returns. Between two prompts (drawing the next question, sending an
//! answer, waiting on the store) the terminal used to be back in its cooked mode, and
//! keys typed ahead then met the line discipline instead of the next prompt:
//!
//! - they were echoed onto the screen, asker text and all;
//! - Enter became a newline, which crossterm reads in raw mode as Ctrl-J, so a typed-ahead
//!   Enter was lost;
//! - Ctrl-C raised SIGINT and, by default, flushed the terminal's queues. The kernel sends
//!   the signal before it flushes, so the "interrupted" line the signal thread writes
//!   could be discarded with the rest (seen once as a failed test on a loaded machine).
//!
//! So the session sets a quiet mode for its whole life: no echo, no line editing, Enter
//! kept as `\r`, and `NOFLSH`. Output processing stays on (the screen's lines still end
//! in `\n`), and Ctrl-C still raises SIGINT between prompts, so a session stuck on a slow
//! store can always be interrupted. The mode the session found is put back when it ends,
//! on every path: a normal end, a drop, a signal, a closed terminal, and around
//! `$EDITOR`, which needs the terminal as the user had it.

use std::sync::Mutex;

/// The mode the terminal had before the session set its own (`None` when not held).
static FOUND: Mutex<Option<libc::termios>> = Mutex::new(None);

/// The terminal descriptor keys are read from (crossterm's choice too): stdin.
const FD: libc::c_int = libc::STDIN_FILENO;

fn found() -> std::sync::MutexGuard<'static, Option<libc::termios>> {
    FOUND.lock().unwrap_or_else(|e| e.into_inner())
}

fn get() -> Option<libc::termios> {
    // SAFETY: `t` is a plain C struct that tcgetattr fills on success; it is only read
    // when tcgetattr returned 0.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(FD, &mut t) == 0).then_some(t)
    }
}

fn set(t: &libc::termios) -> bool {
    // SAFETY: `t` is a valid termios read by tcgetattr; TCSANOW keeps pending input.
    unsafe { libc::tcsetattr(FD, libc::TCSANOW, t) == 0 }
}

/// The quiet mode made from the mode found: see the module doc.
fn quiet(mut t: libc::termios) -> libc::termios {
    t.c_lflag &= !(libc::ECHO | libc::ECHONL | libc::ICANON | libc::IEXTEN);
    t.c_lflag |= libc::NOFLSH | libc::ISIG;
    // IXON: a typed-ahead Ctrl-S would freeze the screen until a Ctrl-Q. VQUIT: Ctrl-\
    // would kill the session with the terminal left quiet (in raw mode both are keys).
    t.c_iflag &= !(libc::ICRNL | libc::INLCR | libc::IGNCR | libc::IXON);
    t.c_cc[libc::VQUIT] = 0;
    t.c_cc[libc::VMIN] = 1;
    t.c_cc[libc::VTIME] = 0;
    t
}

/// Put the terminal in the session's quiet mode, remembering the mode found. Does
/// nothing when stdin is not a terminal or the mode is held already.
pub fn hold() {
    let mut saved = found();
    if saved.is_some() {
        return;
    }
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(FD) } != 1 {
        return;
    }
    if let Some(t) = get() {
        if set(&quiet(t)) {
            *saved = Some(t);
        }
    }
}

/// Put back the mode the terminal had before [`hold`]; safe to call more than once,
/// from any thread, and on a terminal that is gone (the error is ignored: there is
/// nothing left to restore). Keys typed for the screen and not read are discarded, so
/// they do not reach the shell as a command line (output is kept).
pub fn restore() {
    if let Some(t) = found().take() {
        // SAFETY: tcflush only discards the terminal's pending input.
        unsafe { libc::tcflush(FD, libc::TCIFLUSH) };
        set(&t);
    }
}

/// Run `f` with the terminal as the user had it (an editor), then quiet it again.
pub fn as_found<T>(f: impl FnOnce() -> T) -> T {
    let held = {
        let saved = found();
        if let Some(t) = saved.as_ref() {
            set(t);
        }
        saved.is_some()
    };
    let out = f();
    if held {
        if let Some(t) = *found() {
            set(&quiet(t));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_mode_keeps_signals_and_output_and_drops_echo_and_line_editing() {
        // SAFETY: zeroed is a valid termios for this pure bit arithmetic.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        t.c_lflag = libc::ECHO | libc::ICANON | libc::ISIG | libc::IEXTEN;
        t.c_iflag = libc::ICRNL;
        t.c_oflag = libc::OPOST | libc::ONLCR;
        let q = quiet(t);
        assert_eq!(q.c_lflag & (libc::ECHO | libc::ICANON | libc::IEXTEN), 0);
        assert_ne!(q.c_lflag & libc::ISIG, 0, "Ctrl-C still interrupts");
        assert_ne!(q.c_lflag & libc::NOFLSH, 0, "a signal flushes nothing");
        assert_eq!(q.c_iflag & libc::ICRNL, 0, "Enter stays Enter");
        assert_eq!(q.c_iflag & libc::IXON, 0, "Ctrl-S freezes nothing");
        assert_eq!(q.c_cc[libc::VQUIT], 0, "Ctrl-\\ quits nothing");
        assert_eq!(q.c_oflag, t.c_oflag, "output processing untouched");
        assert_eq!(q.c_cc[libc::VMIN], 1);
    }
}
