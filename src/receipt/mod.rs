//! Signed decision receipts: a document a third party can check without
//! trusting the server or reading its database.
//!
//! - [`key`]: the host's Ed25519 key in `receipt.key`, beside `audit.key` and kept like it.
//! - [`build`]: a final request's row and events, checked against each other, into an
//!   unsigned receipt (pure; receipts are rebuilt, never stored).
//! - [`seal`]: which bytes the signature covers, and the receipt's canonical bytes.
//! - [`verify`]: the offline check (bytes and trusted keys in, a verdict out).
//!
//! The document's types are in [`crate::protocol::receipt`]; the use-cases that read the
//! store and sign are in [`crate::app::receipts`].

pub mod build;
pub mod key;
pub mod seal;
pub mod verify;

pub use crate::protocol::receipt::ReceiptError;
pub use key::{PublicKey, ReceiptKey};
pub use verify::Expect;
