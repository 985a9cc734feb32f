//! Reading a file someone else dropped, safely.
//!
//! The file is opened with `O_NOFOLLOW | O_NONBLOCK` (a symlink fails to open; a FIFO
//! does not block), checked with `fstat` to be a regular file no larger than the limit,
//! and read with a bound, so a symlink is never followed and a huge file is never read
//! whole.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a dropped file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not a regular file (symlink, FIFO, directory, socket, device).
    #[error("{0} is not a regular file; only regular files are read")]
    NotRegular(&'static str),
    /// Larger than the limit.
    #[error("the file is {size} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A regular file with more than one hard link: it may be a link to a file outside
    /// the root that the dropper could not otherwise read or move.
    #[error("the file has {0} hard links; only a file with a single link is read (drop a copy, not a link)")]
    HardLinked(u64),
    /// Gone before it could be read (another process took it).
    #[error("the file disappeared")]
    Gone,
    /// Any other I/O error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The kind of a non-regular file, for messages.
pub fn kind_of(ft: &std::fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "a symlink"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else {
        "a special file"
    }
}

/// Read a `FILE|-` command-line argument: `-` is stdin, anything else a file read with
/// [`read_limited`]; both are bounded by `limit`.
pub fn read_arg(arg: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    if arg.as_os_str() != "-" {
        return read_limited(arg, limit);
    }
    let mut buf = Vec::new();
    std::io::stdin().take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: buf.len() as u64,
            limit,
        });
    }
    Ok(buf)
}

/// Read at most `limit` bytes of the regular file at `path`.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_limited_with_mtime(path, limit).map(|(bytes, _)| bytes)
}

/// [`read_limited`], also returning the file's modification time in milliseconds since
/// the epoch (a rename keeps it, so it tells a file already judged from one dropped again).
pub fn read_limited_with_mtime(path: &Path, limit: u64) -> Result<(Vec<u8>, i64), ReadError> {
    read_checked(path, limit, false).map(|(bytes, mtime, _)| (bytes, mtime))
}

/// Read a file someone dropped into a watched directory (`inbox/new/`, `answers/new/`):
/// [`read_limited_with_mtime`], and a file with more than one hard link is refused
/// ([`ReadError::HardLinked`]). A hard link lets someone who can write the directory
/// present a file they do not own, from outside the root, as their input.
pub fn read_dropped(path: &Path, limit: u64) -> Result<(Vec<u8>, i64), ReadError> {
    read_checked(path, limit, true).map(|(bytes, mtime, _)| (bytes, mtime))
}

/// [`read_dropped`], also returning the file's identity (device and inode), so that what
/// is removed later is the file that was read and not one dropped under its name since.
pub fn read_dropped_identified(
    path: &Path,
    limit: u64,
) -> Result<(Vec<u8>, i64, FileIdentity), ReadError> {
    read_checked(path, limit, true)
}

/// Which file a path named when it was read: (device, inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity(pub u64, pub u64);

impl FileIdentity {
    /// The identity of the file now at `path` (not following a symlink); `None` when
    /// there is none.
    pub fn at(path: &Path) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path)
            .ok()
            .map(|m| FileIdentity(m.dev(), m.ino()))
    }
}

fn read_checked(
    path: &Path,
    limit: u64,
    single_link: bool,
) -> Result<(Vec<u8>, i64, FileIdentity), ReadError> {
    // No separate lstat: O_NOFOLLOW makes a symlink fail with ELOOP, O_NONBLOCK keeps a
    // FIFO from blocking, and fstat on the open file tells everything else.
    let f: File = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Gone),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ReadError::NotRegular("a symlink"))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(ReadError::NotRegular("a socket"))
        }
        Err(e) => return Err(e.into()),
    };
    // Trust only the open file: the path may be swapped at any time.
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular(kind_of(&meta.file_type())));
    }
    if single_link {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Err(ReadError::HardLinked(meta.nlink()));
        }
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: buf.len() as u64,
            limit,
        });
    }
    use std::os::unix::fs::MetadataExt;
    Ok((buf, mtime, FileIdentity(meta.dev(), meta.ino())))
}
