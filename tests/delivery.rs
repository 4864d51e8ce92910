//! The promise across hooks: every file delivered exactly once, nothing lost, as a session is
//! played hook by hook: the pipeline, changed files and long texts, packs, sub-agents, the
//! engine's own writers beside the hooks, the Codex CLI.

mod changes;
mod codex;
mod engine_interplay;
mod long_texts;
mod packs;
mod pipeline;
mod seed_cases;
mod subagent_skill;
