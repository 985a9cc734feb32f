//! The state root: where the database and the directory API live.
//!
//! `--root DIR`, else `DSHQ_ROOT`, else the XDG state directory (`$XDG_STATE_HOME/dshq`,
//! default `~/.local/state/dshq`). Directories are created owner-only (0700); the process
//! umask is set to 077 at start so the database and every file dshq writes are 0600.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The state root and its layout (spec §8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// A root at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Root {
        Root { dir: dir.into() }
    }

    /// `--root`/`DSHQ_ROOT` when given, else the XDG state directory.
    pub fn resolve(arg: Option<PathBuf>) -> Result<Root> {
        if let Some(dir) = arg {
            return Ok(Root::new(dir));
        }
        if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            return Ok(Root::new(PathBuf::from(state).join("dshq")));
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok(Root::new(PathBuf::from(home).join(".local/state/dshq"))),
            None => Err(Error::Usage(
                "no state root: pass --root DIR or set DSHQ_ROOT (HOME is not set)".into(),
            )),
        }
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// `dshq.db`.
    pub fn db(&self) -> PathBuf {
        self.dir.join("dshq.db")
    }
    /// `inbox/tmp`.
    pub fn inbox_tmp(&self) -> PathBuf {
        self.dir.join("inbox/tmp")
    }
    /// `inbox/new`.
    pub fn inbox_new(&self) -> PathBuf {
        self.dir.join("inbox/new")
    }
    /// `outbox`.
    pub fn outbox(&self) -> PathBuf {
        self.dir.join("outbox")
    }
    /// `outbox/ID.json`.
    pub fn outcome_file(&self, id: &str) -> PathBuf {
        self.outbox().join(format!("{id}.json"))
    }
    /// `answers/tmp`.
    pub fn answers_tmp(&self) -> PathBuf {
        self.dir.join("answers/tmp")
    }
    /// `answers/new`.
    pub fn answers_new(&self) -> PathBuf {
        self.dir.join("answers/new")
    }
    /// `answers/rejected`.
    pub fn answers_rejected(&self) -> PathBuf {
        self.dir.join("answers/rejected")
    }
    /// `rejected`.
    pub fn rejected(&self) -> PathBuf {
        self.dir.join("rejected")
    }

    /// Create every directory of the layout, owner-only.
    pub fn ensure_layout(&self) -> Result<()> {
        let dirs = [
            self.dir.clone(),
            self.dir.join("inbox"),
            self.inbox_tmp(),
            self.inbox_new(),
            self.outbox(),
            self.dir.join("answers"),
            self.answers_tmp(),
            self.answers_new(),
            self.answers_rejected(),
            self.rejected(),
        ];
        for d in dirs {
            match fs::DirBuilder::new().mode(0o700).create(&d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if !d.is_dir() {
                        return Err(Error::io(&d, e));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    fs::DirBuilder::new()
                        .mode(0o700)
                        .recursive(true)
                        .create(&d)
                        .map_err(|e| Error::io(&d, e))?;
                    fs::set_permissions(&d, fs::Permissions::from_mode(0o700))
                        .map_err(|e| Error::io(&d, e))?;
                }
                Err(e) => return Err(Error::io(&d, e)),
            }
        }
        Ok(())
    }

    /// Create the layout and open (and migrate) the store: the one place a backend is
    /// chosen (SQLite, `dshq.db` in the root).
    pub fn open_store(&self) -> Result<Box<dyn crate::store::Store>> {
        self.ensure_layout()?;
        Ok(Box::new(crate::store::sqlite::SqliteStore::open(
            &self.db(),
        )?))
    }
}

/// Make every file and directory this process creates owner-only.
pub fn restrict_umask() {
    // SAFETY: umask only swaps the process file-mode mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}
