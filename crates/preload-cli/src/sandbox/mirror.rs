//! Copying into a sandbox: the project's skeleton (markdown and directives copied, other files
//! linked), whole state trees, flat directories of small files; paths in text rewritten on the
//! way, within size limits.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use preload_core::mechanisms::discovery::EXCLUDED_DIRS;
use preload_core::mechanisms::packs;
use preload_core::primitives::file::OpError;
use preload_core::primitives::lock;

use super::SandboxError;

/// How much a sandbox copies at most.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Directories of the project's skeleton.
    pub dirs: usize,
    /// Bytes copied in all.
    pub bytes: u64,
    /// Bytes of one file.
    pub file: u64,
}

/// The default limits: 20,000 directories, 256 MiB, files of 16 MiB.
pub const LIMITS: Limits = Limits {
    dirs: 20_000,
    bytes: 256 << 20,
    file: 16 << 20,
};

/// A copy under way: what it rewrote, what it left out, how much it took.
pub struct Copier<'a> {
    /// Rewrites the real paths in a text file's content.
    pub rewrite: &'a dyn Fn(&str) -> String,
    /// The limits.
    pub limits: Limits,
    /// Bytes copied so far.
    pub bytes: u64,
    /// Directories created so far by [`Copier::skeleton`].
    pub dirs: usize,
    /// What was left out, for the user.
    pub notes: Vec<String>,
}

impl Copier<'_> {
    /// Copy one regular file, rewriting its paths when it is text; false when it was left out
    /// for its size.
    pub fn file(&mut self, from: &Path, to: &Path) -> Result<bool, SandboxError> {
        let size = fs::metadata(from).map_err(OpError::at("read", from))?.len();
        if size > self.limits.file || self.bytes + size > self.limits.bytes {
            self.notes
                .push(format!("left out (size): {}", from.display()));
            return Ok(false);
        }
        let bytes = fs::read(from).map_err(OpError::at("read", from))?;
        let out = match String::from_utf8(bytes) {
            Ok(text) => (self.rewrite)(&text).into_bytes(),
            Err(raw) => raw.into_bytes(),
        };
        fs::write(to, &out).map_err(OpError::at("write", to))?;
        self.bytes += size;
        Ok(true)
    }

    /// Copy the tree `from` to `to` whole (regular files and directories; links, lock
    /// directories and their spares are left out).
    pub fn tree(&mut self, from: &Path, to: &Path) -> Result<(), SandboxError> {
        fs::create_dir_all(to).map_err(OpError::at("create", to))?;
        for entry in fs::read_dir(from).map_err(OpError::at("read", from))? {
            let entry = entry.map_err(OpError::at("read", from))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(OpError::at("read", &path))?;
            let target = to.join(entry.file_name());
            let name = entry.file_name();
            let is_lock = name.to_string_lossy().ends_with(".lock") || name == lock::SPARE;
            if kind.is_dir() && !is_lock {
                self.tree(&path, &target)?;
            } else if kind.is_file() {
                self.file(&path, &target)?;
            }
        }
        Ok(())
    }

    /// Copy the regular files directly in `from` into `to`, created private (`0700`, files
    /// `0600`) as the marker directory must be. A missing `from` copies nothing.
    pub fn private_files(&mut self, from: &Path, to: &Path) -> Result<(), SandboxError> {
        fs::create_dir_all(to).map_err(OpError::at("create", to))?;
        fs::set_permissions(to, fs::Permissions::from_mode(0o700))
            .map_err(OpError::at("chmod", to))?;
        let Ok(entries) = fs::read_dir(from) else {
            return Ok(());
        };
        for entry in entries.filter_map(Result::ok) {
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                let target = to.join(entry.file_name());
                if self.file(&entry.path(), &target)? {
                    fs::set_permissions(&target, fs::Permissions::from_mode(0o600))
                        .map_err(OpError::at("chmod", &target))?;
                }
            }
        }
        Ok(())
    }

    /// The project's skeleton: every directory the hooks could walk (not `node_modules`,
    /// `.git` and the other excluded names, not hidden ones but `.directives`, not `skip`),
    /// with copies of the markdown files and of everything in `.directives` (what discovery
    /// reads, which must physically live in the project), links to the real project's other
    /// files (read through, never written: every write of a hook replaces a file by rename or
    /// creates a new one), and `.claude/` holding only a copy of the context packs file.
    pub fn skeleton(
        &mut self,
        from: &Path,
        to: &Path,
        skip: &[PathBuf],
    ) -> Result<(), SandboxError> {
        let mut queue = vec![(from.to_path_buf(), to.to_path_buf())];
        while let Some((real, copy)) = queue.pop() {
            fs::create_dir_all(&copy).map_err(OpError::at("create", &copy))?;
            let Ok(entries) = fs::read_dir(&real) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    let hidden = name.starts_with('.') && name != ".directives";
                    if name == ".claude" {
                        let claude = copy.join(&name);
                        fs::create_dir_all(&claude).map_err(OpError::at("create", &claude))?;
                        let packs = real.join(packs::PROJECT_FILE);
                        if packs.is_file() {
                            self.file(&packs, &copy.join(packs::PROJECT_FILE))?;
                        }
                    } else if !hidden
                        && !EXCLUDED_DIRS.contains(&name.as_str())
                        && !skip.contains(&path)
                    {
                        self.dirs += 1;
                        if self.dirs > self.limits.dirs {
                            self.notes.push(format!(
                                "left out (more than {} directories): {}",
                                self.limits.dirs,
                                path.display()
                            ));
                            return Ok(());
                        }
                        queue.push((path, copy.join(&name)));
                    }
                } else if kind.is_file() || kind.is_symlink() {
                    let markdown = Path::new(&name)
                        .extension()
                        .is_some_and(|e| e.eq_ignore_ascii_case("md"));
                    let target = copy.join(&name);
                    if kind.is_file() && (markdown || real.ends_with(".directives")) {
                        self.file(&path, &target)?;
                    } else {
                        std::os::unix::fs::symlink(&path, &target)
                            .map_err(OpError::at("link", &target))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// `text` with every occurrence of the path `from` (followed by `/`, a quote, a space, the
/// end, or any character that cannot continue a file name) replaced by `to`.
pub fn replace_path(text: &str, from: &str, to: &str) -> String {
    if from.is_empty() || !text.contains(from) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let after = &rest[at + from.len()..];
        let ends = after
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')));
        out.push_str(&rest[..at]);
        out.push_str(if ends { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_path_components_are_replaced() {
        let text = r#"{"a": "/p/x/y", "b": "/p/xy", "c": "/p/x", "d": "see /p/x/z.md and /p/x."}"#;
        assert_eq!(
            replace_path(text, "/p/x", "/s/q"),
            r#"{"a": "/s/q/y", "b": "/p/xy", "c": "/s/q", "d": "see /s/q/z.md and /p/x."}"#
        );
        assert_eq!(replace_path("nothing", "/p", "/s"), "nothing");
    }

    #[test]
    fn the_skeleton_copies_what_discovery_reads_and_links_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        for dir in [
            "src/.directives",
            "node_modules/x",
            ".git",
            ".claude",
            "sessions/s",
        ] {
            fs::create_dir_all(real.join(dir)).unwrap();
        }
        fs::write(real.join("src/.directives/AGENTS.md"), "see /real/src").unwrap();
        fs::write(real.join("src/main.rs"), "fn main() {}").unwrap();
        fs::write(real.join("node_modules/x/README.md"), "x").unwrap();
        fs::write(real.join(".claude/settings.json"), "{}").unwrap();
        fs::write(
            real.join(".claude/context-packs.json"),
            "{\"root\": \"/real\"}",
        )
        .unwrap();
        fs::write(real.join("src/.directives/testing.json"), "[\"/real/src\"]").unwrap();
        let rewrite = |t: &str| t.replace("/real", "/copy");
        let mut copier = Copier {
            rewrite: &rewrite,
            limits: LIMITS,
            bytes: 0,
            dirs: 0,
            notes: Vec::new(),
        };
        let copy = tmp.path().join("copy");
        copier
            .skeleton(&real, &copy, &[real.join("sessions")])
            .unwrap();
        assert_eq!(
            fs::read_to_string(copy.join("src/.directives/AGENTS.md")).unwrap(),
            "see /copy/src"
        );
        let main = copy.join("src/main.rs");
        assert_eq!(fs::read_link(&main).unwrap(), real.join("src/main.rs"));
        assert_eq!(
            fs::read_to_string(copy.join("src/.directives/testing.json")).unwrap(),
            "[\"/copy/src\"]"
        );
        assert!(
            !fs::symlink_metadata(copy.join("src/.directives/testing.json"))
                .unwrap()
                .is_symlink()
        );
        assert!(!copy.join("node_modules").exists() && !copy.join(".git").exists());
        assert!(!copy.join("sessions").exists());
        assert!(copy.join(".claude").is_dir() && !copy.join(".claude/settings.json").exists());
        assert_eq!(
            fs::read_to_string(copy.join(".claude/context-packs.json")).unwrap(),
            "{\"root\": \"/copy\"}"
        );
    }
}
