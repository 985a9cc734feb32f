//! `ROOT/daemon.pid`: the pid of the daemon serving the root, for askers that drop files.
//!
//! A file transport (the Python and TypeScript packages, `contrib/examples/ask.py`) drops
//! a request into `inbox/new/` and waits for `outbox/ID.json`; with no daemon serving the
//! root, nothing would ever come, and the asker would wait forever, silently. The daemon
//! holds an exclusive `flock` on the root, but a lock is awkward to test from Node (no
//! `flock`) and testing it by taking it could keep a starting daemon out. So the daemon
//! also writes its pid here once it serves the root, atomically, and removes it when it
//! stops; an asker whose file was not taken from the inbox within a moment checks that the
//! pid names a live process (`kill(pid, 0)`), and says `NO_DAEMON` when it does not. A
//! daemon killed with SIGKILL leaves the file behind with a dead pid: no daemon, rightly.
//! The limit we accept: a pid reused by another process after such a kill reads as a
//! daemon until one starts again and rewrites the file.

use std::path::{Path, PathBuf};

use crate::error::Result;

/// The file's name in the root.
pub const NAME: &str = "daemon.pid";

/// The pid file of a running daemon, removed when dropped (if it still names this
/// process: a second daemon never gets this far while the lock is held).
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
}

impl PidFile {
    /// Write this process's pid to `root/daemon.pid` (atomically).
    pub fn write(root: &Path) -> Result<PidFile> {
        let pid = std::process::id();
        crate::disk::atomic::write_atomic(root, NAME, format!("{pid}\n").as_bytes(), true)?;
        Ok(PidFile {
            path: root.join(NAME),
        })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let ours = std::fs::read_to_string(&self.path)
            .is_ok_and(|t| t.trim() == std::process::id().to_string());
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
