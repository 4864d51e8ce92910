//! The files a handler and its workers keep their work in: the handler's state and dispatch
//! files (`handler-state.md`, `handler-dispatches/*.md` and their status), and the dispatch
//! file a worker names in `$HOME/.claude/worker-dispatch-path`.

use std::path::{Path, PathBuf};

use crate::mechanisms::context::Context;
use crate::primitives::delivery::{self, FileBody};
use crate::primitives::env;
use crate::primitives::markers;
use crate::primitives::paths;

/// The worker's dispatch-path file under `$HOME/.claude`.
pub const WORKER_DISPATCH_FILE: &str = "worker-dispatch-path";
/// The handler's state file in its docs directory.
pub const HANDLER_STATE: &str = "handler-state.md";
/// The handler's dispatch directory in its docs directory.
pub const HANDLER_DISPATCHES: &str = "handler-dispatches";
/// Dispatch statuses that count as active.
pub const ACTIVE_STATUSES: &[&str] = &["active", "in-progress", "in progress", "running"];
/// Most dispatch files looked at in one call.
const MAX_DISPATCH_SCAN: usize = 500;

/// The account's own home (from the user database): a worker's `HOME` is its config
/// directory, so `~` in its dispatch path means the real home.
fn account_home() -> Option<PathBuf> {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|user| user.dir)
}

/// Expand a dispatch path: `~/` against `home`, relative against `cwd`.
pub fn expand_dispatch_path(text: &str, home: &Path, cwd: &Path) -> PathBuf {
    let path = paths::expand_tilde(text, home);
    paths::lexical_clean(&if path.is_absolute() {
        path
    } else {
        cwd.join(path)
    })
}

/// The worker's dispatch file: the first line of `$HOME/.claude/worker-dispatch-path` (an own
/// regular file, never through a link).
pub fn worker_dispatch_file(ctx: &Context) -> Option<PathBuf> {
    let path = ctx.paths.claude.join(WORKER_DISPATCH_FILE);
    let bytes = markers::read_trusted(&path, markers::current_uid()).ok()??;
    let text = String::from_utf8_lossy(&bytes);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let home = account_home().unwrap_or_else(|| ctx.paths.home.clone());
    Some(expand_dispatch_path(line, &home, &ctx.cwd))
}

/// The handler's docs directory: `PRELOAD_HANDLER_DIR`, else the nearest `docs/` holding a
/// `handler-state.md` above the registered `cwd`, then above this call's `cwd`.
pub fn handler_dir(ctx: &Context, registered: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = ctx.env.get(env::PRELOAD_HANDLER_DIR) {
        return Some(PathBuf::from(dir));
    }
    registered
        .into_iter()
        .chain(std::iter::once(ctx.cwd.as_path()))
        .flat_map(Path::ancestors)
        .map(|dir| dir.join("docs"))
        .find(|docs| docs.join(HANDLER_STATE).is_file())
}

/// The status of a dispatch file: its `| **Status** | … |` row or `Status: …` line, lowercased.
pub fn dispatch_status(text: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim();
        let (key, value) = if line.starts_with('|') {
            let mut cells = line.trim_matches('|').split('|');
            (cells.next()?, cells.next().unwrap_or(""))
        } else if let Some((key, value)) = line.split_once(':') {
            (key, value)
        } else {
            continue;
        };
        let key = key.trim_matches(|c: char| c == '*' || c == '-' || c.is_whitespace());
        if key.eq_ignore_ascii_case("status") {
            let value = value.trim_matches(|c: char| c == '*' || c == ':' || c.is_whitespace());
            return Some(value.to_ascii_lowercase());
        }
    }
    None
}

/// The active dispatch files of a handler's docs directory, by name (no more are read once the
/// call's time is up).
pub fn active_dispatches(ctx: &Context, dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join(HANDLER_DISPATCHES)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "md"))
        .take(MAX_DISPATCH_SCAN)
        .collect();
    files.sort();
    files.retain(|path| {
        if ctx.expired() {
            return false;
        }
        match delivery::read_for_delivery(path, ctx.max_file_bytes()) {
            FileBody::Text(text) => {
                dispatch_status(&text).is_some_and(|s| ACTIVE_STATUSES.contains(&s.as_str()))
            }
            _ => false,
        }
    });
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_status_reads_tables_and_lines() {
        assert_eq!(
            dispatch_status("# T\n| **Status** | Active |\n").as_deref(),
            Some("active")
        );
        assert_eq!(
            dispatch_status("**Status:** completed\n").as_deref(),
            Some("completed")
        );
        assert_eq!(
            dispatch_status("- Status: in-progress").as_deref(),
            Some("in-progress")
        );
        assert_eq!(dispatch_status("no status here"), None);
    }

    #[test]
    fn dispatch_paths_expand_against_the_account_home() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_dispatch_path("~/dev/d.md", home, Path::new("/c")),
            PathBuf::from("/home/u/dev/d.md")
        );
        assert_eq!(
            expand_dispatch_path("d/../e.md", home, Path::new("/c")),
            PathBuf::from("/c/e.md")
        );
        assert_eq!(
            expand_dispatch_path("/abs.md", home, Path::new("/c")),
            PathBuf::from("/abs.md")
        );
    }
}
