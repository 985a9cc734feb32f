//! One integration-test binary: the real `dshq` binary on temporary roots.
//!
//! Every test spawns the binary (and, where it needs one, the real daemon) and waits on
//! conditions with deadlines; nothing sleeps for a fixed time.

mod a2a;
mod adapter_page;
mod agents;
mod api;
mod audit;
mod backup;
mod browser;
mod claude_code;
mod cli;
mod clients;
mod codes;
mod conformance;
mod continued;
mod crash;
mod daemon;
mod delegation;
mod docs;
mod dsh;
mod edit;
mod email;
mod examples;
mod flags;
mod grace;
mod helpers;
mod hooks;
mod hostile;
mod idle;
mod interactive;
mod ladder;
mod layers;
mod lease;
mod lengths;
mod map;
mod mcp;
mod mcp_2026;
mod mcp_conformance;
mod mcp_ts;
mod multihost;
mod net;
mod openapi;
mod operate;
mod outcome;
mod page;
mod prune;
mod push;
mod quorum;
mod reach;
mod receipts;
mod release;
mod screens;
mod seam;
mod sessions;
mod sign_in;
mod slack;
mod snippets;
mod source;
mod sys;
mod tables;
mod teams;
mod telegram;
mod terminal;
#[path = "../support/throwaway.rs"]
#[allow(dead_code)]
mod throwaway;
mod tour;
mod trust;
mod webhooks;
