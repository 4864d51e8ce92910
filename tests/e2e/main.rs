//! End-to-end scenarios: the real Claude Code client (and the real Codex CLI, `codex`) runs a
//! scripted lifecycle against a scripted model on loopback, with the product's hooks installed
//! the way users install them; the scenarios judge what the model received. See `docs/e2e.md`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::missing_panics_doc,
    clippy::panic,
    clippy::similar_names,
    missing_docs
)]

mod branches;
mod client;
mod codex;
mod codex_client;
mod codex_model;
mod filters;
mod fleet;
mod guards;
mod harness;
mod loopback;
mod model;
mod modes;
mod plugin;
mod real_engine;
mod real_engine_caches;
mod received;
mod scenario;
mod scenarios;
mod subagents;
mod summary_line;
mod support;
mod world;
