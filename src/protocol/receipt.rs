//! The signed decision receipt (an extension of the outcome document): its
//! wire types and why one does not verify.
//!
//! A receipt says, for one final request, what was asked (its digest and the questions
//! shown), how it ended (the outcome document the asker got), who decided, under which
//! policy, when, and where its final event sits in the hash chain; signed with the host's
//! Ed25519 key ([`crate::receipt`]). The outcome file carries one in its optional
//! `receipt` field, `dshq receipt ID` prints one, `dshq export --receipts` writes them all.
//!
//! The document's types are declared beside the outcome ([`super::types`]: each contains
//! the other) and named here. The signature covers the receipt's exact bytes (see
//! [`crate::receipt::seal`]); the types fix the field order, so a receipt built twice
//! from the same store is the same document, byte for byte.

pub use super::types::{ChainPosition, Policy, Receipt, Shown, Times, RECEIPT_FORMAT};

/// Why a receipt does not verify (each a stable code: [`ReceiptError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    /// Not a receipt, not the bytes dshq wrote, or a signature that does not verify: the
    /// file was changed, or was never a receipt.
    #[error("{0}")]
    Invalid(String),
    /// Intact and signed, but by a key that is not one of those given.
    #[error(
        "the receipt is signed by {signer}, which is not a key given with --key (ask the \
         host that wrote it for `dshq receipt key`, and trust it only if it is that host's)"
    )]
    UntrustedKey {
        /// The key that signed it.
        signer: String,
    },
    /// Authentic, but of another request than the one named, or travelling in an
    /// outcome that says something else.
    #[error("{0}")]
    Mismatch(String),
}

impl ReceiptError {
    /// The stable code.
    pub fn code(&self) -> crate::protocol::Code {
        use crate::protocol::Code;
        match self {
            ReceiptError::Invalid(_) => Code::ReceiptInvalid,
            ReceiptError::UntrustedKey { .. } => Code::ReceiptUntrustedKey,
            ReceiptError::Mismatch(_) => Code::ReceiptMismatch,
        }
    }
}
