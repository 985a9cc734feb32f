//! How the screen reads a key: [`next`] waits for one no longer than the session's idle
//! watch ([`Idle`], kept by [`super::idle::Presence`]) allows, lets the watch give the
//! lease up when the time runs out, and hands it every key before a prompt acts on it.
//! Every prompt ([`super::keys`]) and the pager ([`super::markdown`]) read through it,
//! so no key reaches the screen unseen by the watch.

use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// The session's idle watch as a prompt sees it ([`super::idle::Presence`]).
pub trait Idle {
    /// How long the reviewer may still be away before the lease is given up; `None`: no
    /// limit now (a lease given with `--lease`, or given up already).
    fn left(&self) -> Option<Duration>;
    /// The time is up: give the lease up.
    fn idle(&self);
    /// A key was pressed (not Ctrl-C): what to do with it.
    fn key(&self) -> Seen;
    /// A line to show under the prompt (the lease was given up, or taken back), if any.
    fn note(&self) -> Option<String>;
}

/// What the idle watch made of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// An ordinary key: act on it.
    Act,
    /// The key took the lease back; it does nothing else.
    Back,
    /// The session cannot go on (see [`super::idle::Presence::take_ended`]).
    Ended,
}

/// What [`next`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A key to act on.
    Key(KeyEvent),
    /// Nothing to act on, but the screen may have changed (a note, a resize): redraw.
    Redraw,
    /// The session cannot go on.
    Ended,
}

/// The next key press, minding `idle`: wait no longer than the time the reviewer may
/// still be away, give the lease up when it runs out, and hand every key (but Ctrl-C,
/// which must always stop the session) to the watch before acting on it.
pub fn next(idle: Option<&dyn Idle>) -> std::io::Result<Input> {
    loop {
        if let Some(i) = idle {
            match i.left() {
                Some(left) if left.is_zero() => {
                    i.idle();
                    return Ok(Input::Redraw);
                }
                // Wait no longer than the time left, then look again.
                Some(left) if !event::poll(left)? => continue,
                _ => {}
            }
        }
        match event::read()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => {
                if is_ctrl_c(&k) {
                    return Ok(Input::Key(k));
                }
                return Ok(match idle.map(|i| i.key()) {
                    None | Some(Seen::Act) => Input::Key(k),
                    Some(Seen::Back) => Input::Redraw,
                    Some(Seen::Ended) => Input::Ended,
                });
            }
            Event::Resize(..) => return Ok(Input::Redraw),
            _ => {}
        }
    }
}

/// Whether `k` is Ctrl-C (in raw mode a key, not a signal).
pub fn is_ctrl_c(k: &KeyEvent) -> bool {
    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)
}
