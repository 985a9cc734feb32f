//! The pure core beyond the dsh vocabulary: the lifecycle of a request and the audit's
//! vocabulary, as types. No I/O, no SQL, no clap.
//!
//! [`crate::protocol`] (the dsh vocabulary, the ask checks, the answer rules, the codes, the
//! digest) and [`crate::text`] are pure as well and stay where they were: this module adds
//! what dshq itself records about a request, so every face and every backend speak the
//! same words.

pub mod access;
pub mod audit;
pub mod channel;
pub mod delegation;
pub mod jwt;
pub mod lifecycle;
pub mod mail_link;
pub mod people;
pub mod push_action;
pub mod quorum;
pub mod sign_in;
pub mod slack_users;
pub mod teams;
pub mod telegram;
pub mod telegram_users;
