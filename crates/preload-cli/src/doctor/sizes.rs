//! The size check of `preload doctor`: the largest files a session would preload, against the cap.
//!
//! Claude Code replaces any hook output over 10,000 characters by a file path, so every output
//! stays within the budget (`PRELOAD_OUTPUT_BUDGET`, default 9,500) and a larger file goes out
//! in labelled parts over several outputs. The files a session preloads: the six core
//! standards, every skill's SKILL.md, its phases' commands and its templates, and whatever the
//! project's sessions have queued (`pendingPreloads`).

use preload_core::state::QUEUED;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::Finding;
use crate::words::plural;
use preload_core::mechanisms::context::Context;
use preload_core::mechanisms::session::{self, CORE_STANDARDS, STATE_FILE};
use preload_core::mechanisms::skill::Skill;
use preload_core::primitives::delivery::{self, FileBody};
use preload_core::primitives::env::Env;
use preload_core::primitives::input::HookInput;
use preload_core::state;

/// Claude Code's cap on one hook output, in characters.
pub const CLIENT_CAP: usize = 10_000;
/// How many files the finding lists.
pub const LISTED: usize = 5;

/// One file a session would preload, and how it would go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sized {
    /// The file.
    pub path: String,
    /// Its size in characters (bytes when it is too large to read).
    pub chars: usize,
    /// How many outputs it takes (0: too large, delivered as a pointer).
    pub parts: usize,
}

/// The files a session in `ctx`'s project would preload: core standards, skills (SKILL.md,
/// phase commands, templates), and the sessions' queues; each once, existing ones only.
pub fn candidates(ctx: &Context) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = CORE_STANDARDS
        .iter()
        .map(|rel| ctx.paths.directives.join(rel))
        .collect();
    let mut skills: Vec<PathBuf> = std::fs::read_dir(&ctx.paths.skills)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    skills.sort();
    for dir in skills {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(skill) = Skill::load(&ctx.paths, name) else {
            continue;
        };
        out.push(skill.file.clone());
        out.extend(skill.templates());
        for phase in skill.phases().iter() {
            out.extend(
                phase
                    .command_names()
                    .iter()
                    .map(|n| ctx.paths.command_file(n)),
            );
        }
    }
    for sessions in ctx.sessions_dirs() {
        for dir in session::session_dirs(&sessions) {
            if let Ok(state) = state::load(&dir.join(STATE_FILE)) {
                out.extend(state.path_list(QUEUED).into_iter().map(PathBuf::from));
            }
        }
    }
    let mut seen = BTreeSet::new();
    out.retain(|p| p.is_file() && seen.insert(ctx.normalize(&p.to_string_lossy())));
    out
}

/// The size of each file, and in how many outputs of `ctx.budget` it goes out; largest first.
pub fn measure(ctx: &Context, files: &[PathBuf]) -> Vec<Sized> {
    let part = delivery::part_size(ctx.budget);
    let mut out: Vec<Sized> = files
        .iter()
        .filter_map(|file| {
            let path = ctx.normalize(&file.to_string_lossy());
            match delivery::read_for_delivery(Path::new(&path), ctx.max_file_bytes()) {
                FileBody::Text(text) => Some(Sized {
                    chars: delivery::chars(&text),
                    parts: delivery::file_parts(&path, &text, part).len(),
                    path,
                }),
                FileBody::TooLarge(bytes) => Some(Sized {
                    chars: usize::try_from(bytes).unwrap_or(usize::MAX),
                    parts: 0,
                    path,
                }),
                FileBody::Unavailable | FileBody::Empty => None,
            }
        })
        .collect();
    out.sort_by(|a, b| b.chars.cmp(&a.chars).then_with(|| a.path.cmp(&b.path)));
    out
}

fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The finding: the [`LISTED`] largest files with their size against the cap and budget.
pub fn check_sizes(vars: &Env, cwd: &Path, findings: &mut Vec<Finding>) {
    let input = HookInput::from_value(json!({ "cwd": cwd }));
    let ctx = Context::new(vars.clone(), "preload", &input, Duration::from_secs(5));
    let sized = measure(&ctx, &candidates(&ctx));
    if sized.is_empty() {
        findings.push(Finding::ok(
            "sizes: no file a session would preload was found",
        ));
        return;
    }
    let lines: Vec<String> = sized
        .iter()
        .take(LISTED)
        .map(|s| {
            let how = match s.parts {
                0 => format!(
                    "over the {}-byte limit: a pointer, not its content",
                    group(usize::try_from(ctx.max_file_bytes()).unwrap_or(usize::MAX))
                ),
                1 => "fits one output".to_owned(),
                n => format!(
                    "{n} parts of at most {}",
                    group(delivery::part_size(ctx.budget))
                ),
            };
            format!("{:>8} chars  {}  ({how})", group(s.chars), s.path)
        })
        .collect();
    let what = format!(
        "sizes: the {} largest of {} a session would preload (cap {} characters per output, budget {}):\n        {}",
        lines.len(),
        plural(sized.len(), "file", "files"),
        group(CLIENT_CAP),
        group(ctx.budget),
        lines.join("\n        ")
    );
    if sized.iter().any(|s| s.parts == 0) {
        findings.push(Finding::warn(
            what,
            "a file over PRELOAD_MAX_FILE_BYTES reaches the agent as a pointer to Read; raise the limit or split the file",
        ));
    } else {
        findings.push(Finding::ok(what));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(9_500), "9,500");
        assert_eq!(group(1_234_567), "1,234,567");
    }
}
