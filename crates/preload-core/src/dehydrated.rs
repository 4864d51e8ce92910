//! A dehydrated session's hand-over ([`fields::DEHYDRATED_CONTEXT`]): finding the one to
//! restore, its recovery section, and the required files it names, resolved on disk.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::context::Context;
use crate::fields;
use crate::file;
use crate::paths;
use crate::process;
use crate::session::{self, STATE_FILE};
use crate::state::{self, State};

/// The most required files one recovery delivers.
pub const MAX_REQUIRED_FILES: usize = 8;

/// A state holding a dehydrated context, to restore.
#[derive(Debug, Clone)]
pub struct Recovery {
    /// The state file that holds it.
    pub state: PathBuf,
    session: String,
    skill: String,
    phase: String,
    context: Map<String, Value>,
}

/// The first `sessions/*/.state.json` (name order, every sessions directory of the project)
/// with a dehydrated context that no other live agent owns.
pub fn find(ctx: &Context) -> Option<Recovery> {
    for root in ctx.sessions_dirs() {
        for dir in session::session_dirs(&root) {
            let path = dir.join(STATE_FILE);
            let Some(text) = file::read_text(&path, state::MAX_STATE_BYTES) else {
                continue;
            };
            if !text.contains(fields::DEHYDRATED_CONTEXT) {
                continue;
            }
            let Ok(state) = State::parse(&text) else {
                continue;
            };
            let Some(Value::Object(context)) = state.get(fields::DEHYDRATED_CONTEXT) else {
                continue;
            };
            if let Some(pid) = state.pid(fields::PID) {
                if pid != ctx.owner_pid && process::is_alive(pid) {
                    continue;
                }
            }
            return Some(Recovery {
                session: dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                skill: state.str(fields::SKILL).unwrap_or("(none)").to_owned(),
                phase: state
                    .str(fields::CURRENT_PHASE)
                    .unwrap_or("(none)")
                    .to_owned(),
                context: context.clone(),
                state: path,
            });
        }
    }
    None
}

impl Recovery {
    fn text(&self, key: &str) -> Option<String> {
        match self.context.get(key)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            Value::String(_) | Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// The required files (the first [`MAX_REQUIRED_FILES`]), each with the file it resolves
    /// to when that exists.
    pub fn files(&self, ctx: &Context) -> Vec<(String, Option<PathBuf>)> {
        let Some(Value::Array(items)) = self.context.get(fields::REQUIRED_FILES) else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .take(MAX_REQUIRED_FILES)
            .map(|entry| {
                let resolved = resolve_required(ctx, entry.trim());
                let found = resolved.is_file().then_some(resolved);
                (entry.to_owned(), found)
            })
            .collect()
    }

    /// The recovery section (the required files follow as their own blocks).
    pub fn header(&self, ctx: &Context) -> String {
        let mut out = format!(
            "## Session Recovery (Dehydrated Context)\n**Session**: {}\n**Skill**: {}\n**Phase**: {}\n",
            self.session, self.skill, self.phase
        );
        for (title, key) in [
            ("Summary", fields::SUMMARY),
            ("Last Action", fields::LAST_ACTION),
        ] {
            if let Some(text) = self.text(key) {
                let _ = writeln!(out, "\n### {title}\n{}", text.trim_end());
            }
        }
        if let Some(Value::Array(steps)) = self.context.get(fields::NEXT_STEPS) {
            out.push_str("\n### Next Steps\n");
            for step in steps {
                let step = step
                    .as_str()
                    .map_or_else(|| step.to_string(), str::to_owned);
                let _ = writeln!(out, "- {step}");
            }
        }
        for (title, key) in [
            ("Handover Instructions", fields::HANDOVER_INSTRUCTIONS),
            ("User Interaction History", fields::USER_HISTORY),
        ] {
            if let Some(text) = self.text(key) {
                let _ = writeln!(out, "\n### {title}\n{}", text.trim_end());
            }
        }
        let files = self.files(ctx);
        if !files.is_empty() {
            out.push_str("\n### Required Files (Auto-Loaded)\n");
            for (entry, found) in files {
                match found {
                    Some(path) => {
                        let _ = writeln!(
                            out,
                            "- {entry} → [Preloaded: {}]",
                            ctx.normalize(&path.to_string_lossy())
                        );
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "- {entry} [MISSING — file not found at {}]",
                            resolve_required(ctx, &entry).display()
                        );
                    }
                }
            }
        }
        out
    }
}

/// `~/…` against `HOME`; `sessions/`, `packages/`, `apps/`, `src/`, `.claude/` and other
/// relative paths against `cwd`.
fn resolve_required(ctx: &Context, entry: &str) -> PathBuf {
    if entry.starts_with('~') {
        paths::expand_tilde(entry, &ctx.paths.home)
    } else if entry.starts_with('/') {
        PathBuf::from(entry)
    } else {
        ctx.cwd.join(entry)
    }
}
