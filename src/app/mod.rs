//! The application layer: one function per use-case, typed input → one [`Store`]
//! transaction → typed result, plus what must follow the commit (publishing an outcome
//! file). Every face calls these and nothing below them: the CLI (args → use-case →
//! render), the daemon's file loop, the hooks, the reviewer's screen, and later the web
//! page and the MCP server. A rule such as "a lease must be live" or "an outcome is
//! published after its commit" is written once, here or in the store, and every face gets it.
//!
//! Use-cases take `&mut dyn Store` (the backend is chosen at run time) and the [`Root`]
//! where files are involved.
//!
//! [`Store`]: crate::store::Store
//! [`Root`]: crate::root::Root

pub mod agents;
pub mod ask;
pub mod audit;
pub mod feed;
pub mod provide;
pub mod session;
pub mod sweep;
