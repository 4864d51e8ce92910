//! Path rules shared by every hook: `~` expansion, the engine's normalisation, the project
//! root, the sessions directory, the engine's install layout and the owner PID.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::primitives::env::{self, Env};
use crate::primitives::memo::Memo;
use crate::primitives::process;

/// Replace a leading `~` or `~/` with `home`.
pub fn expand_tilde(path: &str, home: &Path) -> PathBuf {
    if path == "~" {
        home.to_path_buf()
    } else if let Some(rest) = path.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(path)
    }
}

/// Remove `.` and `..` components lexically (no file system access).
pub fn lexical_clean(path: &Path) -> PathBuf {
    into_clean(path.to_path_buf())
}

/// [`lexical_clean`] of an owned path: one already clean (most paths a hook sees) is given back
/// as it is, without walking its components.
fn into_clean(path: PathBuf) -> PathBuf {
    if is_clean(&path) {
        path
    } else {
        clean_components(&path)
    }
}

/// True when cleaning would give `path` back unchanged: no empty, `.` or `..` component after
/// the root, and no separator at the end. One pass over the bytes, where a walk of the
/// components builds the path again piece by piece (a few thousand instructions a path).
fn is_clean(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    let body = bytes.strip_prefix(b"/").unwrap_or(bytes);
    body.is_empty()
        || body
            .split(|&b| b == b'/')
            .all(|part| !part.is_empty() && part != b"." && part != b"..")
}

/// The components of `path` without `.`, and each `..` taking the one before it away.
fn clean_components(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The engine's `normalize_preload_path`: `~` expanded, and for an existing regular file the
/// directory replaced by its physical path (the basename is kept, so a symlinked file keeps its
/// own name). Anything else comes back expanded and lexically cleaned.
///
/// `~/.claude/.directives/X` and `~/.claude/engine/.directives/X` (with the first a symlink to
/// the second) normalise to the same string.
pub fn normalize(path: &str, home: &Path) -> String {
    normalize_with(path, home, &PhysicalDirs::default())
}

/// [`normalize`], with the physical paths of directories taken from (and added to) `dirs`.
pub fn normalize_with(path: &str, home: &Path, dirs: &PhysicalDirs) -> String {
    let cleaned = into_clean(expand_tilde(path, home));
    if let Some(known) = dirs.files.get(cleaned.as_os_str()) {
        return known;
    }
    // A file this call already found (a reference's candidate) is not looked at again.
    if dirs.probes.get(cleaned.as_os_str()) == Some(true) || cleaned.is_file() {
        if let Some((dir, name)) = dir_and_name(&cleaned) {
            if let Some(physical) = dirs.of(dir) {
                let normalized = physical.join(name).to_string_lossy().into_owned();
                dirs.files
                    .keep(cleaned.into_os_string(), normalized.clone());
                return normalized;
            }
        }
    }
    cleaned.to_string_lossy().into_owned()
}

/// A file's directory (`.` for a bare name) and its name.
fn dir_and_name(path: &Path) -> Option<(&Path, &std::ffi::OsStr)> {
    let dir = path.parent()?;
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    Some((dir, path.file_name()?))
}

/// The symbolic links one directory's resolution follows before it counts as a loop (Linux's
/// own limit, `ELOOP`).
const MAX_LINKS: u32 = 40;

/// The physical paths of directories, each resolved once per hook call however many paths in
/// it are normalised, and the normalised form of each file found, so a file a call looks at
/// from several places is checked once. A hook process lives for one call, so a directory's
/// physical path does not change under it; a directory that cannot be resolved, and a path that
/// is no file, are asked again next time. Clones share what they know.
///
/// Keyed by the path's bytes: hashing a `Path` walks its components, several times the cost of
/// its bytes, and two spellings of one path only cost a second look.
#[derive(Debug, Clone, Default)]
pub struct PhysicalDirs {
    dirs: Memo<OsString, PathBuf>,
    files: Memo<OsString, String>,
    probes: Memo<OsString, bool>,
}

impl PhysicalDirs {
    /// Whether `path` is a regular file (links followed), looked at once per call: for the
    /// places a reference may resolve to, which many files of one call share and which a hook
    /// never creates, so the answer is remembered either way.
    pub fn probe_file(&self, path: &Path) -> bool {
        self.probes.get_or_keep(path.as_os_str(), || path.is_file())
    }

    /// The physical path of `dir`, `None` when it cannot be resolved.
    pub fn of(&self, dir: &Path) -> Option<PathBuf> {
        let mut links = MAX_LINKS;
        self.of_following(dir, &mut links)
    }

    /// [`PhysicalDirs::of`], following at most `links` more symbolic links.
    fn of_following(&self, dir: &Path, links: &mut u32) -> Option<PathBuf> {
        if let Some(physical) = self.dirs.get(dir.as_os_str()) {
            return Some(physical);
        }
        let physical = self.resolve(dir, links)?;
        self.dirs.keep(dir.as_os_str().to_owned(), physical.clone());
        Some(physical)
    }

    /// `dir` resolved from its parent's physical path (known, or resolved the same way): one
    /// `lstat` of its last component; when that is a symbolic link, one `readlink` and its
    /// target resolved the same way from the link's directory (glibc's `realpath` would read
    /// every component of the path again, the target's too). The root, a relative path and a
    /// path ending in `..` are resolved whole.
    fn resolve(&self, dir: &Path, links: &mut u32) -> Option<PathBuf> {
        match (dir.parent(), dir.file_name()) {
            (Some(parent), Some(name)) if dir.is_absolute() => {
                let parent = self.of_following(parent, links)?;
                let candidate = parent.join(name);
                if !std::fs::symlink_metadata(&candidate)
                    .ok()?
                    .file_type()
                    .is_symlink()
                {
                    return Some(candidate);
                }
                *links = links.checked_sub(1)?;
                let target = std::fs::read_link(&candidate).ok()?;
                // An absolute target replaces the directory it is joined to.
                self.of_following(&parent.join(target), links)
            }
            _ => std::fs::canonicalize(dir).ok(),
        }
    }

    /// The physical path of the file `path`: its own target when it is a symbolic link, else
    /// its name in its directory's physical path.
    pub fn of_file(&self, path: &Path) -> Option<PathBuf> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        match dir_and_name(path) {
            Some((dir, name)) if !meta.file_type().is_symlink() => Some(self.of(dir)?.join(name)),
            _ => std::fs::canonicalize(path).ok(),
        }
    }
}

/// The nearest ancestor of `start` (itself included) that contains a `.claude/` directory.
pub fn find_project_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".claude").is_dir())
        .map(Path::to_path_buf)
}

/// The sessions directories to search, the primary first: `<root>[/$WORKSPACE]/sessions`, then
/// `<root>/sessions` when a workspace is set.
pub fn sessions_dirs(root: &Path, workspace: Option<&str>) -> Vec<PathBuf> {
    match workspace {
        Some(ws) if !ws.is_empty() => {
            let nested = lexical_clean(&root.join(ws)).join("sessions");
            vec![nested, root.join("sessions")]
        }
        _ => vec![root.join("sessions")],
    }
}

/// The engine's install layout under `$HOME/.claude`.
#[derive(Debug, Clone)]
pub struct EnginePaths {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$HOME/.claude`.
    pub claude: PathBuf,
    /// `$HOME/.claude/engine`.
    pub engine: PathBuf,
    /// `$HOME/.claude/skills`.
    pub skills: PathBuf,
    /// `$HOME/.claude/.directives` (usually a symlink to `engine/.directives`).
    pub directives: PathBuf,
    /// `$HOME/.claude/engine/.directives`.
    pub engine_directives: PathBuf,
    /// `$HOME/.claude/engine/guards.json`.
    pub guards: PathBuf,
    /// `$HOME/.claude/engine/config.sh`.
    pub config: PathBuf,
}

impl EnginePaths {
    /// The layout under `home`.
    pub fn new(home: &Path) -> Self {
        let claude = home.join(".claude");
        let engine = claude.join("engine");
        Self {
            home: home.to_path_buf(),
            skills: claude.join("skills"),
            directives: claude.join(".directives"),
            engine_directives: engine.join(".directives"),
            guards: engine.join("guards.json"),
            config: engine.join("config.sh"),
            engine,
            claude,
        }
    }

    /// `$HOME/.claude/skills/<name>/SKILL.md`.
    pub fn skill_file(&self, name: &str) -> PathBuf {
        self.skills.join(name).join("SKILL.md")
    }

    /// `$HOME/.claude/engine/.directives/commands/CMD_<name>.md`.
    pub fn command_file(&self, name: &str) -> PathBuf {
        self.engine_directives
            .join("commands")
            .join(format!("CMD_{name}.md"))
    }
}

/// True when `name` is a plain identifier usable inside a path: `[A-Za-z0-9._-]`, not `.`/`..`.
pub fn is_safe_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && name.bytes().all(is_name_byte)
}

/// A byte a safe name ([`is_safe_name`]) may hold: an ASCII letter or digit, `.`, `_`, `-`.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// The PID of the Claude process that owns the session, in the one order every hook and
/// `preload activate` use: `CLAUDE_SUPERVISOR_PID`, `CLAUDE_PID`, the nearest ancestor that is
/// not a shell, the parent.
pub fn owner_pid(vars: &Env) -> u32 {
    [env::CLAUDE_SUPERVISOR_PID, env::CLAUDE_PID]
        .iter()
        .find_map(|name| vars.number::<u32>(name).filter(|pid| *pid > 0))
        .unwrap_or_else(process::nearest_non_shell_ancestor)
}

#[cfg(test)]
mod tests;
