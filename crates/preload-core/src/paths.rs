//! Path rules shared by every hook: `~` expansion, the engine's normalisation, the project
//! root, the sessions directory, the engine's install layout and the owner PID.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::env::{self, Env};
use crate::process;

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
    let cleaned = lexical_clean(&expand_tilde(path, home));
    if let Some(known) = dirs.known_file(&cleaned) {
        return known;
    }
    if cleaned.is_file() {
        if let (Some(dir), Some(name)) = (cleaned.parent(), cleaned.file_name()) {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Some(physical) = dirs.of(dir) {
                let normalized = physical.join(name).to_string_lossy().into_owned();
                dirs.remember_file(cleaned, &normalized);
                return normalized;
            }
        }
    }
    cleaned.to_string_lossy().into_owned()
}

/// The physical paths of directories, each resolved once per hook call however many paths in
/// it are normalised, and the normalised form of each file found, so a file a call looks at
/// from several places is checked once. A hook process lives for one call, so a directory's
/// physical path does not change under it; a directory that cannot be resolved, and a path that
/// is no file, are asked again next time. Clones share what they know.
#[derive(Debug, Clone, Default)]
pub struct PhysicalDirs {
    known: Arc<Mutex<HashMap<PathBuf, PathBuf>>>,
    files: Arc<Mutex<HashMap<PathBuf, String>>>,
}

impl PhysicalDirs {
    fn known_file(&self, cleaned: &Path) -> Option<String> {
        self.files.lock().ok()?.get(cleaned).cloned()
    }

    fn remember_file(&self, cleaned: PathBuf, normalized: &str) {
        if let Ok(mut files) = self.files.lock() {
            files.insert(cleaned, normalized.to_owned());
        }
    }

    /// The physical path of `dir`, `None` when it cannot be resolved.
    pub fn of(&self, dir: &Path) -> Option<PathBuf> {
        if let Some(physical) = self.known.lock().ok()?.get(dir) {
            return Some(physical.clone());
        }
        let physical = self.resolve(dir)?;
        if let Ok(mut known) = self.known.lock() {
            known.insert(dir.to_path_buf(), physical.clone());
        }
        Some(physical)
    }

    /// `dir` resolved from its parent's physical path (known, or resolved the same way): one
    /// `lstat` of its last component, which is resolved whole only when it is a symbolic link.
    /// The root, a relative path and a path ending in `..` are resolved whole.
    fn resolve(&self, dir: &Path) -> Option<PathBuf> {
        match (dir.parent(), dir.file_name()) {
            (Some(parent), Some(name)) if dir.is_absolute() => {
                let candidate = self.of(parent)?.join(name);
                if std::fs::symlink_metadata(&candidate)
                    .ok()?
                    .file_type()
                    .is_symlink()
                {
                    std::fs::canonicalize(&candidate).ok()
                } else {
                    Some(candidate)
                }
            }
            _ => std::fs::canonicalize(dir).ok(),
        }
    }

    /// The physical path of the file `path`: its own target when it is a symbolic link, else
    /// its name in its directory's physical path.
    pub fn of_file(&self, path: &Path) -> Option<PathBuf> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) if !meta.file_type().is_symlink() => {
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                Some(self.of(dir)?.join(name))
            }
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
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
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
mod tests {
    use super::*;

    #[test]
    fn tilde_expands_only_at_the_start() {
        let home = Path::new("/h");
        assert_eq!(expand_tilde("~/a/b", home), PathBuf::from("/h/a/b"));
        assert_eq!(expand_tilde("~", home), PathBuf::from("/h"));
        assert_eq!(expand_tilde("/x/~/y", home), PathBuf::from("/x/~/y"));
    }

    #[test]
    fn normalisation_meets_through_a_directory_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        let real = home.join(".claude/engine/.directives");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("X.md"), "x").unwrap();
        std::os::unix::fs::symlink(&real, home.join(".claude/.directives")).unwrap();
        let a = normalize("~/.claude/.directives/X.md", home);
        let b = normalize(&real.join("X.md").to_string_lossy(), home);
        assert_eq!(a, b);
        assert!(a.ends_with(".claude/engine/.directives/X.md"));
    }

    #[test]
    fn a_call_resolves_each_directory_once_and_clones_share_it() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        let real = home.join("real");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("X.md"), "x").unwrap();
        std::fs::write(real.join("Y.md"), "y").unwrap();
        std::os::unix::fs::symlink(&real, home.join("link")).unwrap();
        let dirs = PhysicalDirs::default();
        let shared = dirs.clone();
        let x = normalize_with("~/link/X.md", home, &dirs);
        assert_eq!(x, normalize("~/link/X.md", home));
        // Pointed elsewhere mid-call, the link still resolves as it did: what the call saw.
        std::fs::remove_file(home.join("link")).unwrap();
        std::fs::create_dir_all(home.join("other")).unwrap();
        std::fs::write(home.join("other/Y.md"), "y").unwrap();
        std::os::unix::fs::symlink(home.join("other"), home.join("link")).unwrap();
        let y = normalize_with("~/link/Y.md", home, &shared);
        assert_eq!(
            y,
            real.canonicalize().unwrap().join("Y.md").to_string_lossy()
        );
        // A fresh call sees the new target.
        assert!(normalize("~/link/Y.md", home).ends_with("/other/Y.md"));
        // A file's physical path: its directory's, or its own target when it is a link.
        std::os::unix::fs::symlink(real.join("X.md"), home.join("other/L.md")).unwrap();
        assert_eq!(
            dirs.of_file(&home.join("other/L.md")),
            Some(real.canonicalize().unwrap().join("X.md"))
        );
        assert_eq!(
            dirs.of_file(&home.join("other/Y.md")),
            Some(home.join("other").canonicalize().unwrap().join("Y.md"))
        );
        assert_eq!(dirs.of_file(&home.join("other/none.md")), None);
        // A file found is remembered for the call; a path that is no file is looked at again.
        std::fs::remove_file(real.join("X.md")).unwrap();
        assert_eq!(normalize_with("~/link/X.md", home, &shared), x);
        assert_eq!(
            normalize_with("~/other/Z.md", home, &dirs),
            home.join("other/Z.md").to_string_lossy()
        );
        std::fs::write(home.join("other/Z.md"), "z").unwrap();
        assert_eq!(
            normalize_with("~/other/Z.md", home, &dirs),
            home.join("other")
                .canonicalize()
                .unwrap()
                .join("Z.md")
                .to_string_lossy()
        );
        // A directory that cannot be resolved is not remembered as such.
        assert_eq!(dirs.of(&home.join("later")), None);
        std::fs::create_dir_all(home.join("later")).unwrap();
        assert!(dirs.of(&home.join("later")).is_some());
    }

    #[test]
    fn a_directory_resolves_from_its_parent_as_realpath_does() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::create_dir_all(root.join("x/y")).unwrap();
        let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, root.join(at));
        link("a/b", "to_b").unwrap(); // relative target
        link(&root.join("x").to_string_lossy(), "a/b/c/to_x").unwrap(); // absolute target
        link("../..", "a/b/c/up").unwrap(); // up the tree
        link("to_b", "chain").unwrap(); // a link to a link
        let dirs = PhysicalDirs::default();
        for rel in [
            "a/b/c",
            "to_b",
            "to_b/c",
            "to_b/c/to_x/y",
            "a/b/c/up",
            "a/b/c/up/b/c/up",
            "chain/c",
            "to_b/../x/y",
            "a/b/c/to_x/../a",
            "a/./b/c/",
            "missing",
            "to_b/missing",
        ] {
            let dir = root.join(rel);
            assert_eq!(dirs.of(&dir), std::fs::canonicalize(&dir).ok(), "{rel}");
        }
    }

    #[test]
    fn missing_files_stay_expanded_and_clean() {
        let home = Path::new("/nowhere-home");
        assert_eq!(normalize("~/a/../b/./c.md", home), "/nowhere-home/b/c.md");
    }

    #[test]
    fn project_root_is_nearest_dot_claude() {
        let tmp = tempfile::tempdir().unwrap();
        let outer = tmp.path().join("p");
        let inner = outer.join("pkg/sub");
        std::fs::create_dir_all(outer.join(".claude")).unwrap();
        std::fs::create_dir_all(inner.join("deep")).unwrap();
        assert_eq!(find_project_root(&inner.join("deep")), Some(outer.clone()));
        std::fs::create_dir_all(inner.join(".claude")).unwrap();
        assert_eq!(find_project_root(&inner.join("deep")), Some(inner));
    }

    #[test]
    fn workspace_nests_sessions_with_global_fallback() {
        let dirs = sessions_dirs(Path::new("/p"), Some("apps/web"));
        assert_eq!(
            dirs,
            vec![
                PathBuf::from("/p/apps/web/sessions"),
                PathBuf::from("/p/sessions")
            ]
        );
        assert_eq!(
            sessions_dirs(Path::new("/p"), None),
            vec![PathBuf::from("/p/sessions")]
        );
    }

    #[test]
    fn owner_pid_prefers_supervisor_then_claude_pid() {
        let vars = Env::from_pairs([(env::CLAUDE_SUPERVISOR_PID, "42"), (env::CLAUDE_PID, "7")]);
        assert_eq!(owner_pid(&vars), 42);
        let vars = Env::from_pairs([(env::CLAUDE_PID, "7")]);
        assert_eq!(owner_pid(&vars), 7);
        let vars = Env::from_pairs([(env::CLAUDE_PID, "junk")]);
        assert!(owner_pid(&vars) > 0);
    }

    #[test]
    fn safe_names_reject_traversal() {
        assert!(is_safe_name("abc-123_x.y"));
        assert!(!is_safe_name("../../etc/x"));
        assert!(!is_safe_name(".."));
        assert!(!is_safe_name(""));
        assert!(!is_safe_name("a/b"));
    }
}
