//! A dehydrated session's hand-over ([`fields::DEHYDRATED_CONTEXT`]): finding the one to
//! restore, its recovery section, and the required files it names, resolved on disk.

use std::cmp::Ordering;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::mechanisms::context::Context;
use crate::mechanisms::session::{self, STATE_FILE};
use crate::primitives::bytes;
use crate::primitives::file;
use crate::primitives::paths;
use crate::primitives::process;
use crate::state::fields;
use crate::state::{self, Handover, Phase, State};

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
    handover: Handover,
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
    // Most states hold none: their bytes are searched, and only a state that names one is
    // taken as text and parsed.
    let read = file::read_regular(&path, state::MAX_STATE_BYTES).ok()?;
    if !bytes::contains(&read, fields::DEHYDRATED_CONTEXT.as_bytes()) {
        if let (Some(plain), Some(key), Some(print)) = (plain, key, print) {
            plain.note(key, print);
        }
        return None;
    }
    let state = State::parse(&file::lossy_text(read)).ok()?;
    let handover = state.handover()?;
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
        handover,
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

    /// Its text (`Display`) into `out`, which is cleared first: what a list line holds after
    /// its tab. A line is compared with this text as bytes: no line is parsed, and a line that
    /// is not what this product wrote is not the print, so its state is read again.
    fn write_to(&self, out: &mut Vec<u8>) {
        let Self {
            dev,
            ino,
            size,
            times: [ms, mn, cs, cn],
        } = *self;
        out.clear();
        match u64::try_from(dev.unsigned_abs()) {
            Ok(magnitude) => write_decimal(out, dev < 0, magnitude),
            // Wider than any `dev_t`: written the slow way.
            Err(_) => out.extend_from_slice(dev.to_string().as_bytes()),
        }
        out.push(b':');
        write_decimal(out, false, ino);
        for (before, number) in [(b':', size), (b':', ms), (b'.', mn), (b':', cs), (b'.', cn)] {
            out.push(before);
            write_decimal(out, number < 0, number.unsigned_abs());
        }
    }
}

/// A number in decimal, `-` first when `negative` (as `Display` writes it), two digits at a
/// time: a scan writes seven numbers for each session.
fn write_decimal(out: &mut Vec<u8>, negative: bool, mut magnitude: u64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    if negative {
        out.push(b'-');
    }
    let mut digits = [0_u8; 20];
    let mut at = digits.len();
    while magnitude >= 10 {
        let pair = usize::try_from(magnitude % 100).unwrap_or(0) * 2;
        magnitude /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if magnitude > 0 || at == digits.len() {
        at -= 1;
        digits[at] = b'0' + u8::try_from(magnitude).unwrap_or(0);
    }
    out.extend_from_slice(&digits[at..]);
}

impl std::fmt::Display for Print {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = Vec::new();
        self.write_to(&mut text);
        f.write_str(&String::from_utf8_lossy(&text))
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
    /// The text of the print a line is compared with.
    scratch: Vec<u8>,
}

/// The file [`Plain`] keeps, in the session index's directory.
const PLAIN_FILE: &str = "undehydrated";

impl<'a> Plain<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            rest: text,
            out: String::with_capacity(text.len()),
            changed: false,
            scratch: Vec::with_capacity(64),
        }
    }

    /// Whether the state of session `name`, now `print`, was read as it is and held nothing.
    /// Lines of names before `name` are dropped: their sessions are gone.
    fn knows(&mut self, name: &str, print: Option<Print>) -> bool {
        while !self.rest.is_empty() {
            let end = bytes::find(b'\n', self.rest.as_bytes()).unwrap_or(self.rest.len());
            let (line, rest) = (&self.rest[..end], self.rest.get(end + 1..).unwrap_or(""));
            let Some(tab) = bytes::find(b'\t', line.as_bytes()) else {
                self.rest = rest;
                self.changed = true;
                continue;
            };
            match line[..tab].cmp(name) {
                Ordering::Less => {
                    self.rest = rest;
                    self.changed = true;
                }
                Ordering::Greater => return false,
                Ordering::Equal => {
                    self.rest = rest;
                    let same = print.is_some_and(|print| {
                        print.write_to(&mut self.scratch);
                        bytes::same(&self.scratch, &line.as_bytes()[tab + 1..])
                    });
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
            print.write_to(&mut self.scratch);
            self.out.push_str(name);
            self.out.push('\t');
            self.out
                .push_str(std::str::from_utf8(&self.scratch).unwrap_or_default());
            self.out.push('\n');
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
    /// The required files (the first [`MAX_REQUIRED_FILES`]), each with the file it resolves
    /// to when that exists.
    pub fn files(&self, ctx: &Context) -> Vec<(String, Option<PathBuf>)> {
        self.handover
            .required_files
            .iter()
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
        let h = &self.handover;
        for (title, text) in [("Summary", &h.summary), ("Last Action", &h.last_action)] {
            if let Some(text) = text {
                let _ = writeln!(out, "\n### {title}\n{}", text.trim_end());
            }
        }
        if let Some(steps) = &h.next_steps {
            out.push_str("\n### Next Steps\n");
            for step in steps {
                let _ = writeln!(out, "- {step}");
            }
        }
        for (title, text) in [
            ("Handover Instructions", &h.handover_instructions),
            ("User Interaction History", &h.user_history),
        ] {
            if let Some(text) = text {
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
