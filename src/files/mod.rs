//! The directory API: the language-agnostic way to ask and answer (spec §8).
//!
//! - [`inbox`]: reading a dropped file safely and ingesting batches of them.
//! - [`answers`]: answer and cancel files from providers.
//! - [`grace`]: a file still being written (or not readable yet) is judged only once it
//!   stood still for a short grace.
//! - [`outbox`]: writing outcome documents, and catching up after a restart.
//! - [`pid_file`]: `daemon.pid`, which tells a file asker a daemon serves the root.
//!
//! Its files are written with [`crate::disk::atomic`]'s durable writes, and keys read through
//! [`crate::disk::secret`]'s one rule, which live a floor down because the store and the
//! root use them too.

pub mod answers;
pub mod grace;
pub mod inbox;
pub mod outbox;
pub mod pid_file;
pub mod safe_read;
