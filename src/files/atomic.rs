//! Durable file writes: write a temp file in the same directory, fsync it, rename it over
//! the target, fsync the directory. A reader sees the old file or the whole new one, and
//! after the directory fsync the new one survives a power cut.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write `bytes` to `dir/name` atomically; fsync the directory when `sync_dir` (batch
/// writers fsync it once with [`sync_dir`] instead).
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8], sync_dir_after: bool) -> Result<()> {
    // Names starting with '.' are ignored by every dshq reader, so a temp file is never read.
    let tmp = write_temp(dir, name, bytes, true)?;
    let target = dir.join(name);
    if let Err(e) = fs::rename(&tmp, &target) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(&target, e));
    }
    if sync_dir_after {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Write `bytes` to a fresh temp file in `dir` (named so no reader ever picks it up) and
/// return its path; fsync it when `fsync`. The caller renames it into place.
pub fn write_temp(dir: &Path, name: &str, bytes: &[u8], fsync: bool) -> Result<std::path::PathBuf> {
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        if fsync {
            f.sync_all().map_err(|e| Error::io(&tmp, e))?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

/// Make every file written so far on `dir`'s file system durable with one call: on Linux
/// `syncfs(2)`, which costs about one fsync instead of one per file. Elsewhere it returns
/// `false` and the caller must fsync each file.
pub fn sync_filesystem(dir: &Path) -> Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let d = File::open(dir).map_err(|e| Error::io(dir, e))?;
        // SAFETY: syncfs on a descriptor we own for the duration of the call.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(Error::io(dir, std::io::Error::last_os_error()));
        }
        Ok(true)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        Ok(false)
    }
}

/// fsync a directory so renames and creations in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// Remove temp files (`.NAME.PID.N.tmp`) that a killed dshq process left in `dir`. Only
/// files of processes that no longer exist are removed, so a writer running right now
/// keeps its temp file. Returns how many were removed.
pub fn remove_orphan_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(inner) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
            continue;
        };
        // NAME.PID.N: the pid is the second-to-last dot-separated field.
        let mut parts = inner.rsplitn(3, '.');
        let (_n, pid) = (parts.next(), parts.next());
        let Some(pid) = pid.and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive = pid == std::process::id() as i32
            || unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}
