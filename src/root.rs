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

/// Where the store lives: the SQLite file in the root (the default), or a PostgreSQL
/// database shared by the roots of many hosts (`--store postgres://…` / `DSHQ_STORE`).
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Backend {
    /// `dshq.db` in the root.
    #[default]
    Sqlite,
    /// A PostgreSQL database, by its URL (which may carry a password: never printed;
    /// [`Backend`]'s `Debug` and [`redact_url`] hide it).
    Postgres(String),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Sqlite => f.write_str("Sqlite"),
            Backend::Postgres(url) => write!(f, "Postgres({})", redact_url(url)),
        }
    }
}

impl Backend {
    /// The backend a `--store` value names: none, empty or `sqlite` is the SQLite file in
    /// the root; `postgres://…` or `postgresql://…` a PostgreSQL database.
    pub fn parse(store: Option<&str>) -> Result<Backend> {
        match store.map(str::trim) {
            None | Some("") | Some("sqlite") => Ok(Backend::Sqlite),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Backend::Postgres(url.to_string()))
            }
            Some(other) => Err(Error::Usage(format!(
                "--store/DSHQ_STORE {:?} is not a store: use `sqlite` (the default, dshq.db in \
                 the root) or a postgres://USER@HOST/DATABASE URL",
                redact_url(other)
            ))),
        }
    }
}

/// `url` with its password (if any) replaced by `***`, for messages and logs.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    match authority[..at].split_once(':') {
        Some((user, _password)) => format!(
            "{}{user}:***{}",
            &url[..scheme_end],
            &url[scheme_end + at..]
        ),
        None => url.to_string(),
    }
}

/// The file in the root that names it among the roots sharing one store.
pub const ORIGIN_FILE: &str = "origin";

/// The state root and its layout (spec §8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
    backend: Backend,
    quorum: std::sync::Arc<crate::core::quorum::Policy>,
}

impl Root {
    /// A root at `dir`, with its store in the root (SQLite).
    pub fn new(dir: impl Into<PathBuf>) -> Root {
        Root {
            dir: dir.into(),
            backend: Backend::Sqlite,
            quorum: Default::default(),
        }
    }

    /// The same root with its store elsewhere.
    pub fn with_backend(mut self, backend: Backend) -> Root {
        self.backend = backend;
        self
    }

    /// The same root with the config file's quorum policy: every store it
    /// opens holds asks to it.
    pub fn with_quorum_policy(mut self, policy: crate::core::quorum::Policy) -> Root {
        self.quorum = std::sync::Arc::new(policy);
        self
    }

    /// The people directory of the config file (`[people]`).
    pub fn people(&self) -> &crate::core::people::People {
        &self.quorum.people
    }

    /// Where the store lives.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Whether the store is the SQLite file in this root (not shared with other roots).
    pub fn store_is_local(&self) -> bool {
        self.backend == Backend::Sqlite
    }

    /// This root's name among the roots that share one store: 32 hex digits in
    /// [`ORIGIN_FILE`], made on first use. A request remembers the root it came from, and
    /// only that root's daemon writes its outcome file.
    pub fn origin(&self) -> Result<String> {
        let path = self.dir.join(ORIGIN_FILE);
        let valid = |s: &str| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
        match fs::read_to_string(&path) {
            Ok(s) if valid(s.trim()) => return Ok(s.trim().to_string()),
            Ok(_) => {
                return Err(Error::io(
                    &path,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "not a dshq origin file (32 hex digits)",
                    ),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
        let mut id = [0u8; 16];
        getrandom::getrandom(&mut id)
            .map_err(|e| Error::io(&path, std::io::Error::other(e.to_string())))?;
        let id = crate::protocol::digest::hex(&id);
        // Created whole under a temporary name, then linked into place without replacing:
        // two commands starting at once agree on the one that won.
        crate::disk::atomic::write_new(&self.dir, ORIGIN_FILE, format!("{id}\n").as_bytes())?;
        let s = fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        if valid(s.trim()) {
            Ok(s.trim().to_string())
        } else {
            Err(Error::io(
                &path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, "not a dshq origin file"),
            ))
        }
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
        self.missing_dirs().map(|_| ())
    }

    /// [`Root::check_trusted`], returning the layout's directories that do not exist yet
    /// (parents first).
    fn missing_dirs(&self) -> Result<Vec<PathBuf>> {
        let euid = current_euid();
        let mut missing = Vec::new();
        for d in self.layout() {
            if !check_path(&d, euid, true)? {
                missing.push(d);
            }
        }
        check_path(&self.db(), euid, false)?;
        Ok(missing)
    }

    /// Create every directory of the layout, owner-only, after checking that what exists
    /// is trusted ([`Root::check_trusted`]). A directory the check found is not created
    /// again: every command opens the store through here, and a complete root costs one
    /// `lstat` a path.
    pub fn ensure_layout(&self) -> Result<()> {
        for d in self.missing_dirs()? {
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
    pub fn open_store(&self) -> Result<crate::store::Store> {
        self.ensure_layout()?;
        let mut store: crate::store::Store = match &self.backend {
            Backend::Sqlite => crate::store::sqlite::SqliteStore::open(&self.db())?.into(),
            Backend::Postgres(url) => self.open_postgres(url)?,
        };
        store.set_quorum_policy(self.quorum.clone());
        Ok(store)
    }

    fn open_postgres(&self, url: &str) -> Result<crate::store::Store> {
        let origin = self.origin()?;
        Ok(crate::store::postgres::PgStore::connect(url, Some(&self.dir), Some(&origin))?.into())
    }

    /// Refuse a root that does not exist (`NO_ROOT`): the directory is missing, or, with
    /// the store in the root (SQLite), it holds no `dshq.db`. A read command checks this
    /// first, so that only the daemon and writing commands create a root.
    pub fn require_existing(&self) -> Result<()> {
        let dir_exists = self.dir.is_dir();
        let exists = dir_exists && (!self.store_is_local() || self.db().exists());
        if exists {
            return Ok(());
        }
        Err(Error::NoRoot {
            path: self.dir.clone(),
            dir_exists,
        })
    }

    /// Open the database for a read command: nothing is created, migrated or written, so
    /// a read-only copy of a root (an auditor's) can be read.
    pub fn open_store_read(&self) -> Result<crate::store::Store> {
        if let Backend::Postgres(url) = &self.backend {
            // Nothing of a shared store is in the root but its name and the audit key.
            self.ensure_layout()?;
            return self.open_postgres(url);
        }
        // A read touches only the database: a directory this user cannot even look into
        // (an auditor's copy of someone else's root) is skipped, not refused; one that can
        // be seen is checked like any other.
        let euid = current_euid();
        for d in self.layout() {
            match check_path(&d, euid, true) {
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::PermissionDenied => {}
                other => {
                    other?;
                }
            }
        }
        check_path(&self.db(), euid, false)?;
        Ok(crate::store::sqlite::SqliteStore::open_read(&self.db())?.into())
    }
}

fn current_euid() -> u32 {
    rustix::process::geteuid().as_raw()
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

/// Check one path of the root: see the module documentation. `Ok(true)` when it exists
/// (and passed), `Ok(false)` when it does not.
fn check_path(path: &Path, euid: u32, want_dir: bool) -> Result<bool> {
    let trusted_owner = |uid: u32| uid == euid || uid == 0;
    let link = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(path, e)),
    };
    if link.file_type().is_symlink() && !trusted_owner(link.uid()) {
        return Err(unsafe_root(
            path,
            format_args!("is a symlink owned by uid {}", link.uid()),
        ));
    }
    // Only a symlink needs a second look, at what it points to.
    let m = if link.file_type().is_symlink() {
        match fs::metadata(path) {
            Ok(m) => m,
            // A dangling symlink of ours: creating the layout reports it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io(path, e)),
        }
    } else {
        link
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
    Ok(true)
}

/// Make every file and directory this process creates owner-only.
pub fn restrict_umask() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_is_parsed_and_its_password_never_shown() {
        assert_eq!(Backend::parse(None).unwrap(), Backend::Sqlite);
        assert_eq!(Backend::parse(Some("sqlite")).unwrap(), Backend::Sqlite);
        let pg = Backend::parse(Some("postgres://dshq:s3cret@db.example/q")).unwrap();
        assert_eq!(
            pg,
            Backend::Postgres("postgres://dshq:s3cret@db.example/q".into())
        );
        assert!(!format!("{pg:?}").contains("s3cret"), "{pg:?}");
        let e = Backend::parse(Some("mysql://u:s3cret@h/db")).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert_eq!(
            redact_url("postgresql://u:p@h:5432/db?sslmode=require"),
            "postgresql://u:***@h:5432/db?sslmode=require"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact_url("postgresql://postgres@localhost/x?host=/tmp/a@b"),
            "postgresql://postgres@localhost/x?host=/tmp/a@b"
        );
    }

    #[test]
    fn a_root_names_itself_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let a = root.origin().unwrap();
        assert_eq!(a.len(), 32);
        assert_eq!(root.origin().unwrap(), a, "the same name every time");
        let other_dir = tempfile::tempdir().unwrap();
        assert_ne!(Root::new(other_dir.path()).origin().unwrap(), a);
    }
}
