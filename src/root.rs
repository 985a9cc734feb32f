//! The state root: where the database and the directory API live.
//!
//! `--root DIR`, else `DSHQ_ROOT`, else the XDG state directory (`$XDG_STATE_HOME/dshq`,
//! default `~/.local/state/dshq`). Directories are created owner-only (0700); the process
//! umask is set to 077 at start so the database and every file dshq writes are 0600.
//!
//! An existing root is trusted only as ssh trusts its files: the root, every directory of
//! the layout and `dshq.db` must be owned by this user (or by root), must not be writable by
//! group or others, and a symlink among them must itself be owned by this user or root.
//! Anyone else who can write there could replace `outbox/` and plant an answer, or rewrite
//! the database. Such a root is refused with `UNSAFE_ROOT` before anything is written.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
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

    fn layout(&self) -> [PathBuf; 10] {
        [
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
        ]
    }

    /// Refuse a root that someone other than this user (or root) could change: see the
    /// module documentation. Paths that do not exist yet are skipped.
    pub fn check_trusted(&self) -> Result<()> {
        let euid = current_euid();
        for d in self.layout() {
            check_path(&d, euid, true)?;
        }
        check_path(&self.db(), euid, false)
    }

    /// Create every directory of the layout, owner-only, after checking that what exists
    /// is trusted ([`Root::check_trusted`]).
    pub fn ensure_layout(&self) -> Result<()> {
        self.check_trusted()?;
        for d in self.layout() {
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

    /// Open the database for a read command: nothing is created, migrated or written, so
    /// a read-only copy of a root (an auditor's) can be read.
    pub fn open_store_read(&self) -> Result<Box<dyn crate::store::Store>> {
        // A read touches only the database: a directory this user cannot even look into
        // (an auditor's copy of someone else's root) is skipped, not refused; one that can
        // be seen is checked like any other.
        let euid = current_euid();
        for d in self.layout() {
            match check_path(&d, euid, true) {
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::PermissionDenied => {}
                other => other?,
            }
        }
        check_path(&self.db(), euid, false)?;
        Ok(Box::new(crate::store::sqlite::SqliteStore::open_read(
            &self.db(),
        )?))
    }
}

fn current_euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn unsafe_root(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::question(
        crate::protocol::Code::UnsafeRoot,
        format!(
            "refusing the state root: {} {why}",
            crate::text::path_for_log(path)
        ),
    )
}

/// Check one path of the root: see the module documentation.
fn check_path(path: &Path, euid: u32, want_dir: bool) -> Result<()> {
    let trusted_owner = |uid: u32| uid == euid || uid == 0;
    let link = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    if link.file_type().is_symlink() && !trusted_owner(link.uid()) {
        return Err(unsafe_root(
            path,
            format_args!("is a symlink owned by uid {}", link.uid()),
        ));
    }
    let m = match fs::metadata(path) {
        Ok(m) => m,
        // A dangling symlink of ours: creating the layout reports it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    if want_dir && !m.is_dir() {
        return Err(unsafe_root(path, "is not a directory"));
    }
    if !want_dir && !m.is_file() {
        return Err(unsafe_root(path, "is not a regular file"));
    }
    if !trusted_owner(m.uid()) {
        return Err(unsafe_root(
            path,
            format_args!("is owned by uid {}, not by this user ({euid})", m.uid()),
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(unsafe_root(
            path,
            format_args!(
                "is writable by group or others (mode {:o}); chmod go-w it",
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Make every file and directory this process creates owner-only.
pub fn restrict_umask() {
    // SAFETY: umask only swaps the process file-mode mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}
