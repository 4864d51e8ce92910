//! A dehydrated session's hand-over ([`fields::DEHYDRATED_CONTEXT`]): finding the one to
//! restore, its recovery section, and the required files it names, resolved on disk.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

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
///
/// A state is read only when it may hold one: the states a scan found without any are
/// remembered with their file's identity, size and times
/// (`sessions/.preload-index/undehydrated`), and are not read again until one of those changes
/// (the context is written by a rewrite that changes at least the size; a state reached through
/// a link is always read).
pub fn find(ctx: &Context) -> Option<Recovery> {
    for root in ctx.sessions_dirs() {
        let Ok(listed) = fs::File::open(&root) else {
            continue;
        };
        let mut plain = Plain::open(&root);
        let found = session::session_dirs(&root)
            .into_iter()
            .find_map(|dir| look(ctx, &listed, &dir, &mut plain));
        plain.save(found.is_none());
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The recovery in the session `dir` (in the sessions directory open as `root`), noting in
/// `plain` a state that holds none.
fn look(ctx: &Context, root: &fs::File, dir: &Path, plain: &mut Plain) -> Option<Recovery> {
    let path = dir.join(STATE_FILE);
    let name = dir.file_name()?.to_string_lossy().into_owned();
    let print = file_print(root, &name);
    if plain.knows(&name, print.as_deref()) {
        return None;
    }
    let text = file::read_text(&path, state::MAX_STATE_BYTES)?;
    if !text.contains(fields::DEHYDRATED_CONTEXT) {
        plain.note(name, print);
        return None;
    }
    let state = State::parse(&text).ok()?;
    let Some(Value::Object(context)) = state.get(fields::DEHYDRATED_CONTEXT) else {
        return None;
    };
    if let Some(pid) = state.pid(fields::PID) {
        if pid != ctx.owner_pid && process::is_alive(pid) {
            return None;
        }
    }
    Some(Recovery {
        session: name,
        skill: state.str(fields::SKILL).unwrap_or("(none)").to_owned(),
        phase: state
            .str(fields::CURRENT_PHASE)
            .unwrap_or("(none)")
            .to_owned(),
        context: context.clone(),
        state: path,
    })
}

/// Identity, size and times of the state of session `name` in the sessions directory open as
/// `root`, when it is a regular file (`None` for a link or no file). Looked up from the open
/// directory: the walk to it is not repeated for each session.
fn file_print(root: &fs::File, name: &str) -> Option<String> {
    use nix::fcntl::AtFlags;
    use nix::sys::stat::{SFlag, fstatat};
    let st = fstatat(
        root,
        format!("{name}/{STATE_FILE}").as_str(),
        AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .ok()?;
    (SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG).then(|| {
        format!(
            "{}:{}:{}:{}.{}:{}.{}",
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime,
            st.st_mtime_nsec,
            st.st_ctime,
            st.st_ctime_nsec
        )
    })
}

/// The states of one sessions directory known to hold no dehydrated context, each with its
/// file's [`file_print`] when it was read: `<sessions>/.preload-index/undehydrated`, a line
/// `<session directory>\t<print>` each. A cache: unreadable or missing means empty, and it is
/// written (atomically, not synced) only when it changed.
struct Plain {
    path: PathBuf,
    entries: HashMap<String, String>,
    visited: HashSet<String>,
    changed: bool,
}

/// The file [`Plain`] keeps, in the session index's directory.
const PLAIN_FILE: &str = "undehydrated";

impl Plain {
    fn open(root: &Path) -> Self {
        let path = root.join(session::INDEX_DIR).join(PLAIN_FILE);
        let entries = file::read_text(&path, state::MAX_STATE_BYTES)
            .map(|text| {
                text.lines()
                    .filter_map(|line| line.split_once('\t'))
                    .map(|(name, print)| (name.to_owned(), print.to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            path,
            entries,
            visited: HashSet::new(),
            changed: false,
        }
    }

    /// Whether the state of session `name`, now `print`, was read as it is and held nothing.
    fn knows(&mut self, name: &str, print: Option<&str>) -> bool {
        self.visited.insert(name.to_owned());
        let known = print.is_some() && self.entries.get(name).map(String::as_str) == print;
        if !known && self.entries.remove(name).is_some() {
            self.changed = true;
        }
        known
    }

    /// The state of session `name`, read as `print`, holds nothing.
    fn note(&mut self, name: String, print: Option<String>) {
        if let Some(print) = print.filter(|_| !name.contains(['\t', '\n'])) {
            self.entries.insert(name, print);
            self.changed = true;
        }
    }

    /// Keep what the scan learnt; after a `complete` one, forget the sessions it did not see.
    fn save(mut self, complete: bool) {
        if complete {
            let before = self.entries.len();
            self.entries.retain(|name, _| self.visited.contains(name));
            self.changed |= self.entries.len() != before;
        }
        if !self.changed || !self.path.parent().is_some_and(Path::is_dir) {
            return;
        }
        let mut names: Vec<(&String, &String)> = self.entries.iter().collect();
        names.sort();
        let mut text = String::new();
        for (name, print) in names {
            let _ = writeln!(text, "{name}\t{print}");
        }
        let _ = file::write_cache(&self.path, text.as_bytes());
    }
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

#[cfg(test)]
mod tests;
