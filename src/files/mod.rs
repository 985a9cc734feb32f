//! The directory API: the language-agnostic way to ask and answer (spec §8).
//!
//! - [`atomic`]: durable writes (temp file, fsync, rename, fsync the directory).
//! - [`inbox`]: reading a dropped file safely and ingesting batches of them.
//! - [`answers`]: answer and cancel files from providers.
//! - [`grace`]: a file still being written (or not readable yet) is judged only once it
//!   stood still for a short grace.
//! - [`outbox`]: writing outcome documents, and catching up after a restart.
//! - [`secret`]: reading a key or secret file, only when its owner alone may read it.
//! - [`pid_file`]: `daemon.pid`, which tells a file asker a daemon serves the root.

pub mod answers;
pub mod atomic;
pub mod grace;
pub mod inbox;
pub mod outbox;
pub mod pid_file;
pub mod safe_read;
pub mod secret;
