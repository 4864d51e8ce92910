//! The project's ignore rule for seeds: `sessions/.seeds/` in the git repository's own exclude
//! file (`.git/info/exclude`), added by install and removed by uninstall only when install added
//! it.
//!
//! Seeds are per-process state of one machine, like the `settings.local.json` install wires, so
//! the rule goes where git keeps a clone's own rules, never into a tracked `.gitignore` that
//! every teammate would see change. It is written as two lines, a comment naming preload and
//! the pattern; uninstall removes exactly that pair, and a rule the user wrote is never touched.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use preload_core::primitives::file::OpError;
use preload_core::primitives::{file, paths};

/// The seeds' directory, relative to the project root.
pub const SEEDS_PATTERN: &str = "sessions/.seeds/";

/// The comment install writes above the pattern, by which uninstall knows the rule is its own.
pub const MARK: &str =
    "# preload-hooks: per-process seeds (preload uninstall removes these two lines)";

/// Why the exclude file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum IgnoreError {
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] OpError),
}

/// Where the rule goes for one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoreRule {
    /// The repository's exclude file (`<common git dir>/info/exclude`).
    pub exclude: PathBuf,
    /// The pattern, relative to the repository's top: [`SEEDS_PATTERN`], under the project's
    /// directory when the project is below the top.
    pub pattern: String,
}

impl IgnoreRule {
    /// The rule for `project` when it lies in a git repository (the nearest ancestor with a
    /// `.git` directory, or a `.git` file naming one, as in a worktree); `None` otherwise.
    pub fn for_project(project: &Path) -> Option<Self> {
        let (top, git_dir) = project
            .ancestors()
            .find_map(|dir| Some((dir, git_dir_of(&dir.join(".git"))?)))?;
        let below = project.strip_prefix(top).ok()?;
        let mut pattern = String::new();
        for part in below.components() {
            pattern.push_str(&escape(&part.as_os_str().to_string_lossy()));
            pattern.push('/');
        }
        pattern.push_str(SEEDS_PATTERN);
        Some(Self {
            exclude: common_dir(&git_dir).join("info").join("exclude"),
            pattern,
        })
    }

    /// Add the rule unless the file already has it (in any spelling git reads the same); true
    /// when it was added.
    pub fn add(&self) -> Result<bool, IgnoreError> {
        let text = read(&self.exclude)?;
        if text.lines().any(|line| self.is_pattern(line)) {
            return Ok(false);
        }
        let mut new = text;
        if !new.is_empty() && !new.ends_with('\n') {
            new.push('\n');
        }
        new.push_str(MARK);
        new.push('\n');
        new.push_str(&self.pattern);
        new.push('\n');
        if let Some(dir) = self.exclude.parent() {
            fs::create_dir_all(dir).map_err(OpError::at("create", dir))?;
        }
        write(&self.exclude, &new)?;
        Ok(true)
    }

    /// Remove the rule install added (the comment and the pattern right after it); a pattern
    /// without the comment is the user's and stays. True when it was removed.
    pub fn remove(&self) -> Result<bool, IgnoreError> {
        let text = read(&self.exclude)?;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let Some(at) = (0..lines.len().saturating_sub(1))
            .find(|&i| lines[i].trim_end() == MARK && lines[i + 1].trim_end() == self.pattern)
        else {
            return Ok(false);
        };
        let new: String = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != at && *i != at + 1)
            .map(|(_, line)| *line)
            .collect();
        write(&self.exclude, &new)?;
        Ok(true)
    }

    /// True for a line that ignores the seeds as the pattern does: with or without a leading
    /// `/` or the trailing `/`, trailing spaces aside.
    fn is_pattern(&self, line: &str) -> bool {
        let line = line.trim_end();
        let bare = self.pattern.trim_end_matches('/');
        let line = line.strip_prefix('/').unwrap_or(line);
        line.trim_end_matches('/') == bare && !line.is_empty()
    }
}

/// The git directory a `.git` entry stands for: itself when a directory, the directory its
/// `gitdir:` line names when a file (a worktree or a submodule).
fn git_dir_of(dot_git: &Path) -> Option<PathBuf> {
    let meta = fs::metadata(dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    let text = file::read_text(dot_git, 4096)?;
    let named = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let dir = dot_git.parent()?.join(named);
    dir.is_dir().then_some(dir)
}

/// The directory a worktree shares with its main repository (`commondir`), where `info/`
/// lives; the git directory itself otherwise.
fn common_dir(git_dir: &Path) -> PathBuf {
    file::read_text(&git_dir.join("commondir"), 4096)
        .map(|t| paths::lexical_clean(&git_dir.join(t.trim())))
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(|| git_dir.to_path_buf())
}

/// A path component as a literal in an ignore pattern.
fn escape(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if matches!(c, '*' | '?' | '[' | '\\') || (i == 0 && matches!(c, '#' | '!')) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn read(path: &Path) -> Result<String, IgnoreError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(OpError::at("read", path)(e).into()),
    }
}

fn write(path: &Path, text: &str) -> Result<(), IgnoreError> {
    file::write_atomic(path, text.as_bytes())
        .map_err(|err| OpError::at("write", path)(err.source).into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn spellings_git_reads_alike_count_as_the_rule() {
        let rule = IgnoreRule {
            exclude: PathBuf::from("/x"),
            pattern: SEEDS_PATTERN.into(),
        };
        for line in [
            "sessions/.seeds/",
            "/sessions/.seeds/",
            "sessions/.seeds",
            "/sessions/.seeds  ",
        ] {
            assert!(rule.is_pattern(line), "{line}");
        }
        for line in [
            "",
            "sessions/",
            "# sessions/.seeds/",
            "other/sessions/.seeds/",
        ] {
            assert!(!rule.is_pattern(line), "{line}");
        }
    }

    #[test]
    fn names_become_literal_patterns() {
        assert_eq!(escape("app"), "app");
        assert_eq!(escape("#x*[1]"), "\\#x\\*\\[1]");
        assert_eq!(escape("a!b"), "a!b");
    }
}
