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

use rustix::termios::{
    isatty, tcflush, tcgetattr, tcsetattr, InputModes, LocalModes, OptionalActions, QueueSelector,
    SpecialCodeIndex, Termios,
};

/// The mode the terminal had before the session set its own (`None` when not held).
static FOUND: Mutex<Option<Termios>> = Mutex::new(None);

fn found() -> std::sync::MutexGuard<'static, Option<Termios>> {
    FOUND.lock().unwrap_or_else(|e| e.into_inner())
}

/// The terminal keys are read from (crossterm's choice too): stdin.
fn terminal() -> std::io::Stdin {
    std::io::stdin()
}

fn get() -> Option<Termios> {
    tcgetattr(terminal()).ok()
}

fn set(t: &Termios) -> bool {
    // Now: pending input is kept.
    tcsetattr(terminal(), OptionalActions::Now, t).is_ok()
}

/// The quiet mode made from the mode found: see the module doc.
fn quiet(mut t: Termios) -> Termios {
    t.local_modes &=
        !(LocalModes::ECHO | LocalModes::ECHONL | LocalModes::ICANON | LocalModes::IEXTEN);
    t.local_modes |= LocalModes::NOFLSH | LocalModes::ISIG;
    // IXON: a typed-ahead Ctrl-S would freeze the screen until a Ctrl-Q. VQUIT: Ctrl-\
    // would kill the session with the terminal left quiet (in raw mode both are keys).
    t.input_modes &=
        !(InputModes::ICRNL | InputModes::INLCR | InputModes::IGNCR | InputModes::IXON);
    t.special_codes[SpecialCodeIndex::VQUIT] = 0;
    t.special_codes[SpecialCodeIndex::VMIN] = 1;
    t.special_codes[SpecialCodeIndex::VTIME] = 0;
    t
}

/// Put the terminal in the session's quiet mode, remembering the mode found. Does
/// nothing when stdin is not a terminal or the mode is held already.
pub fn hold() {
    let mut saved = found();
    if saved.is_some() || !isatty(terminal()) {
        return;
    }
    if let Some(t) = get() {
        if set(&quiet(t.clone())) {
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
        let _ = tcflush(terminal(), QueueSelector::IFlush);
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
        if let Some(t) = found().clone() {
            set(&quiet(t));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mode of a real terminal: a new pseudo-terminal's, as the kernel sets it.
    fn a_terminals_mode() -> Termios {
        use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
        let main = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pseudo-terminal");
        grantpt(&main).unwrap();
        unlockpt(&main).unwrap();
        let name = ptsname(&main, Vec::new()).unwrap();
        let side = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        tcgetattr(&side).unwrap()
    }

    #[test]
    fn quiet_mode_keeps_signals_and_output_and_drops_echo_and_line_editing() {
        let t = a_terminals_mode();
        assert!(t
            .local_modes
            .contains(LocalModes::ECHO | LocalModes::ICANON));
        assert!(t.input_modes.contains(InputModes::ICRNL));
        let q = quiet(t.clone());
        assert!(!q
            .local_modes
            .intersects(LocalModes::ECHO | LocalModes::ICANON | LocalModes::IEXTEN));
        assert!(
            q.local_modes.contains(LocalModes::ISIG),
            "Ctrl-C still interrupts"
        );
        assert!(
            q.local_modes.contains(LocalModes::NOFLSH),
            "a signal flushes nothing"
        );
        assert!(
            !q.input_modes.contains(InputModes::ICRNL),
            "Enter stays Enter"
        );
        assert!(
            !q.input_modes.contains(InputModes::IXON),
            "Ctrl-S freezes nothing"
        );
        assert_eq!(
            q.special_codes[SpecialCodeIndex::VQUIT],
            0,
            "Ctrl-\\ quits nothing"
        );
        assert_eq!(
            q.output_modes, t.output_modes,
            "output processing untouched"
        );
        assert_eq!(q.special_codes[SpecialCodeIndex::VMIN], 1);
    }
}
