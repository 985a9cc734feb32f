//! The two file rules every floor that touches the disk shares, below the store and the
//! root (which use them) and the directory API (which is built on them):
//!
//! - [`atomic`]: durable writes (temp file, fsync, rename, fsync the directory).
//! - [`secret`]: reading a key or secret file, only when its owner alone may read it.

pub mod atomic;
pub mod secret;
