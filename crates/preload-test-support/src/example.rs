//! The bundled example laid out as a user's machine: `examples/engine` as `~/.claude/engine`,
//! `examples/skills` as `~/.claude/skills`, the `~/.claude/.directives` symlink the engine's
//! installer makes, the default rules, and `examples/project` with an empty `sessions/`.
//!
//! Shared by the test sandbox, `make demo` and `make bench`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo() -> PathBuf {
    // This crate's manifest sits at `crates/preload-test-support`, two levels down.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// Copy a directory tree (directories and regular files).
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Lay the example out under `home` and `project`.
pub fn lay_out(home: &Path, project: &Path) -> io::Result<()> {
    let examples = repo().join("examples");
    let claude = home.join(".claude");
    copy_tree(&examples.join("engine"), &claude.join("engine"))?;
    copy_tree(&examples.join("skills"), &claude.join("skills"))?;
    std::os::unix::fs::symlink(
        claude.join("engine/.directives"),
        claude.join(".directives"),
    )?;
    fs::copy(
        repo().join("hooks/guards.json"),
        claude.join("engine/guards.json"),
    )?;
    copy_tree(&examples.join("project"), project)?;
    fs::create_dir_all(project.join("sessions"))
}
