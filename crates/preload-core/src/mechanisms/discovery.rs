//! Directive discovery: when a directory is touched, walk up from it to the project root (or the
//! `~/.claude` cap), collecting directive files (`.directives/<NAME>`, else `<NAME>` directly in
//! the directory), and record the walk in `touchedDirs`.
//!
//! `touchedDirs` maps each directory already walked to the directive files first found there.
//! A directory that is a key is never walked again, and a walk stops below the first ancestor
//! that is a key (everything above it was walked then), so a sibling of a walked directory only
//! scans its own new levels. A file recorded under any key is never reported twice.

use std::path::{Path, PathBuf};

use crate::primitives::paths::{self, PhysicalDirs};
use crate::state::State;

mod touched;
pub use touched::{FILE_TOOLS, Touched, touched};

/// The checklist file name (tracked for the deactivation gate).
pub const CHECKLIST: &str = "CHECKLIST.md";
/// Directive names every caller accepts.
pub const CORE_DIRECTIVES: [&str; 3] = ["AGENTS.md", "INVARIANTS.md", "COMMANDS.md"];
/// Every directive name looked for, in output order.
pub const DIRECTIVE_NAMES: [&str; 9] = [
    "AGENTS.md",
    "INVARIANTS.md",
    "ARCHITECTURE.md",
    "COMMANDS.md",
    "TESTING.md",
    "PITFALLS.md",
    "CONTRIBUTING.md",
    "TEMPLATE.md",
    "CHECKLIST.md",
];
/// Directory names never scanned (when they appear inside the walked tree).
pub const EXCLUDED_DIRS: [&str; 6] = ["node_modules", ".git", "sessions", "tmp", "dist", "build"];

/// Where walks may go.
#[derive(Debug, Clone)]
pub struct Scope {
    /// `~/.claude`: a directory under it walks up to it and no further.
    pub claude_dir: PathBuf,
    /// The project root: a directory under it walks up to it and no further.
    pub project_root: Option<PathBuf>,
    /// `$HOME`, for normalising found paths.
    pub home: PathBuf,
    /// The working directory, against which relative tool paths are read.
    pub cwd: PathBuf,
    /// Directories resolved so far in this call, for normalising found paths.
    pub physical_dirs: PhysicalDirs,
}

/// Which directive names a call accepts besides [`CORE_DIRECTIVES`].
#[derive(Debug, Clone, Default)]
pub struct Accept {
    /// Extra basenames: the skill's declared `directives` (for a read, all but the checklist).
    pub declared: Vec<String>,
}

impl Accept {
    /// Whether a directive file name is accepted.
    pub fn accepts(&self, name: &str) -> bool {
        CORE_DIRECTIVES.contains(&name) || self.declared.iter().any(|d| d == name)
    }

    /// True when names beyond the core ones are accepted: walked ancestors are then scanned
    /// again for those names (nothing already recorded is reported twice).
    fn widens(&self) -> bool {
        self.declared
            .iter()
            .any(|d| !CORE_DIRECTIVES.contains(&d.as_str()))
    }
}

/// The directory a tool path stands for: the path itself when it is a directory, else its
/// parent; relative paths are read against `cwd`. `None` for an empty path.
pub fn touched_dir(raw: &str, cwd: &Path) -> Option<PathBuf> {
    if raw.trim().is_empty() {
        return None;
    }
    let path = paths::lexical_clean(&cwd.join(raw));
    if path.is_dir() {
        Some(path)
    } else {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
    }
}

/// The top of a walk from `dir`: `~/.claude` for directories under it, else the project root
/// for directories under it, else `None` (outside both: no discovery).
pub fn boundary(scope: &Scope, dir: &Path) -> Option<PathBuf> {
    if dir.starts_with(&scope.claude_dir) {
        return Some(scope.claude_dir.clone());
    }
    scope
        .project_root
        .as_ref()
        .filter(|root| dir.starts_with(root))
        .cloned()
}

/// True when a component of `dir` below `top` is an excluded name (`node_modules`, `tmp`, …).
/// Components of `top` itself never count, so projects under `/tmp` work.
pub fn is_excluded(dir: &Path, top: &Path) -> bool {
    dir.strip_prefix(top).is_ok_and(|rel| {
        rel.components()
            .any(|c| EXCLUDED_DIRS.iter().any(|x| c.as_os_str() == *x))
    })
}

/// The directive files of one directory, in [`DIRECTIVE_NAMES`] order: `.directives/<NAME>`
/// when it is a file, else `<NAME>`. Most directories have no `.directives/`: one look at it
/// spares a look for each name inside.
pub fn directive_files(dir: &Path) -> Vec<PathBuf> {
    let directives = dir.join(".directives");
    let has_directives = directives.is_dir();
    DIRECTIVE_NAMES
        .iter()
        .filter_map(|name| {
            let preferred = directives.join(name);
            let flat = dir.join(name);
            if has_directives && preferred.is_file() {
                Some(preferred)
            } else if flat.is_file() {
                Some(flat)
            } else {
                None
            }
        })
        .collect()
}

/// What one discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The claimed directory.
    pub dir: String,
    /// New accepted directive files (normalised), most general first.
    pub files: Vec<String>,
}

fn key_of(dir: &Path) -> String {
    dir.to_string_lossy().into_owned()
}

/// Every file already recorded under any `touchedDirs` key: full paths, or bare names recorded
/// by the engine's `session activate` (joined with their key).
fn recorded(state: &State) -> Vec<String> {
    state
        .touched_dirs()
        .into_iter()
        .flat_map(|(dir, files)| {
            files.into_iter().map(move |f| {
                if f.starts_with('/') {
                    f
                } else {
                    format!("{}/{f}", dir.trim_end_matches('/'))
                }
            })
        })
        .collect()
}

fn is_walked(state: &State, dir: &Path) -> bool {
    state.is_touched(&key_of(dir))
}

/// Discover directives for a tool touching `raw_path`, inside the caller's locked update.
///
/// Claims the directory in `touchedDirs` (an already-claimed directory gives `None`), walks up
/// within the [`boundary`], records each walked level with the new files found there, adds new
/// checklists to `discoveredChecklists`, and resets `directiveReadsWithoutClearing` when
/// anything new was found. Paths outside the project root and `~/.claude` give `None` and
/// change nothing.
pub fn discover(
    state: &mut State,
    scope: &Scope,
    raw_path: &str,
    accept: &Accept,
) -> Option<Found> {
    let dir = touched_dir(raw_path, &scope.cwd)?;
    let top = boundary(scope, &dir)?;
    if is_walked(state, &dir) {
        return None;
    }
    let mut seen = recorded(state);
    // Levels from the touched directory up to the boundary, stopping below a walked ancestor.
    let mut levels: Vec<PathBuf> = Vec::new();
    for level in dir.ancestors() {
        if !level.starts_with(&top) {
            break;
        }
        if level != dir && is_walked(state, level) && !accept.widens() {
            break;
        }
        levels.push(level.to_path_buf());
    }
    // Inside the project, a link (directory or file) that leads out of it never brings in an
    // outside file: found files must physically live under the physical project root.
    let physical_root = scope
        .project_root
        .as_ref()
        .filter(|root| **root == top)
        .and_then(|root| scope.physical_dirs.of(root));
    let mut per_level: Vec<(String, Vec<String>)> = Vec::new();
    for level in &levels {
        let mut new_here = Vec::new();
        if !is_excluded(level, &top) {
            for file in directive_files(level) {
                let name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if !accept.accepts(&name) {
                    continue;
                }
                if let Some(root) = &physical_root {
                    if !scope
                        .physical_dirs
                        .of_file(&file)
                        .is_some_and(|p| p.starts_with(root))
                    {
                        continue;
                    }
                }
                let normalized = paths::normalize_with(
                    &file.to_string_lossy(),
                    &scope.home,
                    &scope.physical_dirs,
                );
                let spelled = file.to_string_lossy().into_owned();
                if seen.contains(&normalized) || seen.contains(&spelled) {
                    continue;
                }
                seen.push(normalized.clone());
                new_here.push(normalized);
            }
        }
        per_level.push((key_of(level), new_here));
    }
    for (key, files) in &per_level {
        state.record_touched(key, files);
    }
    // Most general level first: the project's rules before the package's.
    let files: Vec<String> = per_level
        .into_iter()
        .rev()
        .flat_map(|(_, files)| files)
        .collect();
    for file in &files {
        if file.ends_with(&format!("/{CHECKLIST}")) {
            state.add_checklist(file);
        }
    }
    if !files.is_empty() {
        state.reset_directive_reads();
    }
    Some(Found {
        dir: key_of(&dir),
        files,
    })
}

#[cfg(test)]
mod tests;
