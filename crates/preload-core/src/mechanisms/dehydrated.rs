//! A dehydrated session's hand-over ([`fields::DEHYDRATED_CONTEXT`]): finding the one to
//! restore, its recovery section, and the required files it names, resolved on disk.

use std::cmp::Ordering;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::mechanisms::context::Context;
use crate::mechanisms::session::{self, STATE_FILE};
use crate::primitives::file;
use crate::primitives::paths;
use crate::primitives::process;
use crate::state::fields;
use crate::state::{self, Phase, State};

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
/// a link is always read). A session costs one `fstatat` and a comparison with its line. The
/// owner's own session (the one its PID cache names) is read every time and never remembered:
/// SessionStart rewrites its state, so remembering it would rewrite the list on every start.
pub fn find(ctx: &Context) -> Option<Recovery> {
    let owner_session = session::cached_session(ctx);
    for root in ctx.sessions_dirs() {
        let Ok(listed) = fs::File::open(&root) else {
            continue;
        };
        let plain_file = root.join(session::INDEX_DIR).join(PLAIN_FILE);
        let known = file::read_text(&plain_file, state::MAX_STATE_BYTES).unwrap_or_default();
        let mut plain = Plain::new(&known);
        let owner = owner_session
            .as_deref()
            .filter(|dir| dir.parent() == Some(root.as_path()))
            .and_then(Path::file_name);
        let mut relative = Vec::new();
        let found = session::session_names(&root).into_iter().find_map(|name| {
            let plain = (Some(name.as_os_str()) != owner).then_some(&mut plain);
            look(ctx, &root, &listed, &name, &mut relative, plain)
        });
        plain.save(&plain_file, found.is_none());
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The recovery in session `name` of the sessions directory `root` (open as `listed`), noting
/// in `plain`, when given, a state that holds none. `relative` is scratch space for the
/// state's path.
fn look(
    ctx: &Context,
    root: &Path,
    listed: &fs::File,
    name: &OsStr,
    relative: &mut Vec<u8>,
    mut plain: Option<&mut Plain<'_>>,
) -> Option<Recovery> {
    let key = name.to_str();
    let mut print = None;
    if let (Some(plain), Some(key)) = (plain.as_deref_mut(), key) {
        relative.clear();
        relative.extend_from_slice(name.as_bytes());
        relative.push(b'/');
        relative.extend_from_slice(STATE_FILE.as_bytes());
        print = Print::of(listed, relative);
        if plain.knows(key, print) {
            return None;
        }
    }
    let path = root.join(name).join(STATE_FILE);
    let text = file::read_text(&path, state::MAX_STATE_BYTES)?;
    if !text.contains(fields::DEHYDRATED_CONTEXT) {
        if let (Some(plain), Some(key), Some(print)) = (plain, key, print) {
            plain.note(key, print);
        }
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
        session: name.to_string_lossy().into_owned(),
        skill: state.str(fields::SKILL).unwrap_or("(none)").to_owned(),
        phase: state
            .current_phase()
            .map_or("(none)", Phase::as_str)
            .to_owned(),
        context: context.clone(),
        state: path,
    })
}

/// Identity, size and times of a state file: written as
/// `<dev>:<ino>:<size>:<mtime>.<ns>:<ctime>.<ns>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Print {
    /// `dev_t` is unsigned on Linux and signed on macOS.
    dev: i128,
    ino: u64,
    size: i64,
    times: [i64; 4],
}

impl Print {
    /// The print of `relative` (a path under the directory open as `dir`) when it is a regular
    /// file (`None` for a link or no file). Looked up from the open directory: the walk to it
    /// is not repeated for each session.
    fn of(dir: &fs::File, relative: &[u8]) -> Option<Self> {
        use nix::fcntl::AtFlags;
        use nix::sys::stat::{SFlag, fstatat};
        let st = fstatat(dir, relative, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        (SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG).then_some(Self {
            dev: i128::from(st.st_dev),
            ino: st.st_ino,
            size: st.st_size,
            times: [st.st_mtime, st.st_mtime_nsec, st.st_ctime, st.st_ctime_nsec],
        })
    }

    /// What [`Print`]'s `Display` wrote (every list line is parsed on a scan: by hand, a
    /// fifth of the instructions of splitting and `str::parse`).
    fn parse(text: &str) -> Option<Self> {
        // Seven numbers, each a sign and a magnitude, parted by ':' or '.'.
        let mut numbers = [(false, 0_u64); 7];
        let mut bytes = text.bytes();
        for (i, (negative, magnitude)) in numbers.iter_mut().enumerate() {
            let mut digits = 0;
            loop {
                match bytes.next() {
                    Some(b'-') if digits == 0 && !*negative => *negative = true,
                    Some(digit @ b'0'..=b'9') => {
                        *magnitude = magnitude
                            .checked_mul(10)?
                            .checked_add(u64::from(digit - b'0'))?;
                        digits += 1;
                    }
                    Some(b':' | b'.') if i < 6 && digits > 0 => break,
                    None if i == 6 && digits > 0 => break,
                    _ => return None,
                }
            }
        }
        let unsigned = |(negative, magnitude): (bool, u64)| (!negative).then_some(magnitude);
        let signed = |(negative, magnitude): (bool, u64)| {
            i64::try_from(magnitude)
                .ok()
                .map(|m| if negative { -m } else { m })
        };
        let wide = |(negative, magnitude): (bool, u64)| {
            let magnitude = i128::from(magnitude);
            if negative { -magnitude } else { magnitude }
        };
        let [dev, ino, size, ms, mn, cs, cn] = numbers;
        Some(Self {
            dev: wide(dev),
            ino: unsigned(ino)?,
            size: signed(size)?,
            times: [signed(ms)?, signed(mn)?, signed(cs)?, signed(cn)?],
        })
    }
}

impl std::fmt::Display for Print {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            dev,
            ino,
            size,
            times: [ms, mn, cs, cn],
        } = self;
        write!(f, "{dev}:{ino}:{size}:{ms}.{mn}:{cs}.{cn}")
    }
}

/// The states of one sessions directory known to hold no dehydrated context, each with its
/// file's [`Print`] when it was read: `<sessions>/.preload-index/undehydrated`, a line
/// `<session directory>\t<print>` each, in name order. A cache: unreadable or missing means
/// empty, and it is written (atomically, not synced) only when it changed.
///
/// The sessions are scanned in name order too: the list is read alongside, one line ahead at
/// most, and written again as the scan goes (a line out of order is dropped, and its state
/// read).
struct Plain<'a> {
    /// The lines of the list as it was the scan has not reached.
    rest: &'a str,
    /// The list as the scan leaves it, up to where it is.
    out: String,
    /// Whether `out` left out or added a line (so the file is written again; comparing the
    /// two texts would read both whole, 10,000 sessions' lines).
    changed: bool,
}

/// The file [`Plain`] keeps, in the session index's directory.
const PLAIN_FILE: &str = "undehydrated";

impl<'a> Plain<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            rest: text,
            out: String::with_capacity(text.len()),
            changed: false,
        }
    }

    /// Whether the state of session `name`, now `print`, was read as it is and held nothing.
    /// Lines of names before `name` are dropped: their sessions are gone.
    fn knows(&mut self, name: &str, print: Option<Print>) -> bool {
        while !self.rest.is_empty() {
            let (line, rest) = self.rest.split_once('\n').unwrap_or((self.rest, ""));
            let Some((listed, listed_print)) = line.split_once('\t') else {
                self.rest = rest;
                self.changed = true;
                continue;
            };
            match listed.cmp(name) {
                Ordering::Less => {
                    self.rest = rest;
                    self.changed = true;
                }
                Ordering::Greater => return false,
                Ordering::Equal => {
                    self.rest = rest;
                    let same = print.is_some() && Print::parse(listed_print) == print;
                    if same {
                        self.out.push_str(line);
                        self.out.push('\n');
                    } else {
                        self.changed = true;
                    }
                    return same;
                }
            }
        }
        false
    }

    /// The state of session `name`, read as `print`, holds nothing.
    fn note(&mut self, name: &str, print: Print) {
        if !name.contains(['\t', '\n']) {
            let _ = writeln!(self.out, "{name}\t{print}");
            self.changed = true;
        }
    }

    /// Keep what the scan learnt in `path`: after a `complete` scan, the lines it did not
    /// reach are of sessions that are gone; otherwise they stand.
    fn save(mut self, path: &Path, complete: bool) {
        if complete {
            self.changed |= !self.rest.is_empty();
        } else {
            self.out.push_str(self.rest);
        }
        if self.changed && path.parent().is_some_and(Path::is_dir) {
            let _ = file::write_cache(path, self.out.as_bytes());
        }
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
