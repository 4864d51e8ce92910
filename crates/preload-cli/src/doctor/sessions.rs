//! The state checks of `preload doctor`: the state files, seeds and locks of a sessions directory.
//!
//! Every state file and seed readable, no seed of a process that is gone, no stale lock.

use std::fs;
use std::path::{Path, PathBuf};

use super::Finding;
use preload_core::mechanisms::session::{self, SEEDS_DIR, STATE_FILE};
use preload_core::primitives::lock::{self, LockHealth};
use preload_core::state::{self, StateError};

/// State files, seeds and lock directories under one sessions directory.
pub(super) fn check_sessions(dir: &Path, findings: &mut Vec<Finding>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut states = 0;
    let mut problems = 0;
    let mut scan_dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.extension().is_none_or(|x| x != "lock"))
        .collect();
    scan_dirs.sort();
    for sub in scan_dirs {
        let is_seeds = sub.file_name().is_some_and(|n| n == SEEDS_DIR);
        let Ok(files) = fs::read_dir(&sub) else {
            continue;
        };
        let mut files: Vec<PathBuf> = files.filter_map(Result::ok).map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.extension().is_some_and(|x| x == "lock") && path.is_dir() {
                match lock::inspect(&path) {
                    LockHealth::DeadHolder(pid) => {
                        problems += 1;
                        findings.push(Finding::fail(
                            format!(
                                "lock: {} is stale (holder PID {pid} is dead)",
                                path.display()
                            ),
                            format!(
                                "the next writer reclaims it; safe to remove now: rm -r '{}'",
                                path.display()
                            ),
                        ));
                    }
                    LockHealth::Stale => {
                        problems += 1;
                        findings.push(Finding::fail(
                            format!(
                                "lock: {} is stale (no holder recorded, older than {} s)",
                                path.display(),
                                lock::STALE_AFTER.as_secs()
                            ),
                            format!(
                                "the next writer reclaims it; safe to remove now: rm -r '{}'",
                                path.display()
                            ),
                        ));
                    }
                    LockHealth::Held(_) | LockHealth::Fresh => {}
                }
                continue;
            }
            let is_state = if is_seeds {
                path.extension().is_some_and(|x| x == "json") && !name.contains(".tmp.")
            } else {
                name == STATE_FILE
            };
            if !is_state {
                continue;
            }
            states += 1;
            match state::load(&path) {
                Err(StateError::Corrupt { reason: why, .. }) => {
                    problems += 1;
                    findings.push(Finding::fail(
                        format!(
                            "state: {} is corrupt ({why}); left untouched",
                            path.display()
                        ),
                        "the hooks skip it and fail open; fix the JSON or move the file aside",
                    ));
                }
                // An ended conversation's record is a dead process's on purpose.
                Err(_) | Ok(_)
                    if is_seeds
                        && !name.ends_with(session::ENDED_SUFFIX)
                        && session::seed_is_stale(&path) =>
                {
                    findings.push(Finding::warn(
                        format!("seed: {} belongs to a process that is gone", path.display()),
                        "SessionStart removes stale seeds; safe to delete",
                    ));
                }
                _ => {}
            }
        }
    }
    if problems == 0 {
        findings.push(Finding::ok(format!(
            "state: {states} state files in {} readable, no stale locks",
            dir.display()
        )));
    }
}
