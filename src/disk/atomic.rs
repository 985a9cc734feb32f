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

/// The longest file name most Linux file systems accept (`NAME_MAX`), in bytes.
pub const NAME_MAX: usize = 255;

/// Room for the name part of a temp file name: `.` + NAME + `.PID.N.tmp` (a pid has at most
/// 10 digits, a counter at most 20) stays within [`NAME_MAX`].
const TEMP_NAME_ROOM: usize = NAME_MAX - 40;

/// `name` when it is at most `max` bytes; otherwise its first bytes (cut at a character
/// boundary) followed by `~` and 16 hex digits of the SHA-256 of the whole name, `max`
/// bytes at most. Two different long names get different results (up to a 64-bit hash
/// collision), and the result starts like the name, so a person finds it by its start.
pub fn fit_name(name: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if name.len() <= max {
        return std::borrow::Cow::Borrowed(name);
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(name.as_bytes());
    let hash = crate::protocol::digest::hex(&digest[..8]);
    let mut cut = max.saturating_sub(hash.len() + 1);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    std::borrow::Cow::Owned(format!("{}~{hash}", &name[..cut]))
}

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

/// Create `dir/name` with `bytes` unless it exists: written whole and fsynced under a
/// temporary name, then hard-linked into place (never replacing a file another process
/// created first), and the directory fsynced. Returns whether this call created it.
pub fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> Result<bool> {
    let tmp = write_temp(dir, name, bytes, true)?;
    let target = dir.join(name);
    let linked = fs::hard_link(&tmp, &target);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_dir(dir)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(&target, e)),
    }
}

/// Write `bytes` to a fresh temp file in `dir` (named so no reader ever picks it up) and
/// return its path; fsync it when `fsync`. The caller renames it into place.
pub fn write_temp(dir: &Path, name: &str, bytes: &[u8], fsync: bool) -> Result<std::path::PathBuf> {
    // A temp name only has to be unique and recognisable as ours, so a long target name
    // is cut: `.NAME.PID.N.tmp` must fit NAME_MAX whatever NAME an asker chose.
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        fit_name(name, TEMP_NAME_ROOM),
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
        let d = File::open(dir).map_err(|e| Error::io(dir, e))?;
        rustix::fs::syncfs(&d).map_err(|e| Error::io(dir, e.into()))?;
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
        let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let alive = pid == std::process::id() || crate::sys::process_exists(pid);
        if !alive && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_with_a_hash() {
        assert_eq!(fit_name("short", 10), "short");
        let a = format!("{}a", "é".repeat(200));
        let b = format!("{}b", "é".repeat(200));
        let (fa, fb) = (fit_name(&a, 100), fit_name(&b, 100));
        assert!(fa.len() <= 100 && fb.len() <= 100, "{fa}");
        assert_ne!(fa, fb);
        assert!(fa.starts_with("éé"));
        assert_eq!(fa, fit_name(&a, 100));
    }

    #[test]
    fn temp_files_of_long_names_fit() {
        let dir = tempfile::tempdir().unwrap();
        let name = "n".repeat(NAME_MAX);
        write_atomic(dir.path(), &name, b"x", true).unwrap();
        assert_eq!(fs::read(dir.path().join(&name)).unwrap(), b"x");
    }
}
