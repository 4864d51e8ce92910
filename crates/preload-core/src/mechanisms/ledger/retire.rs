//! What a seed leaves when its process is gone: one ended record of the seed and its carry,
//! for a later `--resume` of its conversation. The process's own `SessionEnd` retires its seed;
//! a process that ended without one (killed, its terminal closed) has its seed retired by the
//! sweep of the next `SessionStart` in the project.

use std::fs;
use std::path::Path;
use std::time::Instant;

use super::{carry_path, read_seed};
use crate::mechanisms::session::{self, ENDED_SUFFIX, SEEDS_DIR};
use crate::primitives::file;
use crate::primitives::lock::StateLock;
use crate::state::fields;
use crate::state::{self, Durability, StateError};

/// Under the seed's lock: the seed at `seed` and its carry as one ended record
/// ([`session::ended_path`]) when they know their conversation, then both removed.
pub fn retire_seed(seed: &Path, deadline: Instant) -> Result<(), StateError> {
    let lock = StateLock::acquire(seed, deadline)?;
    let result = match read_seed(seed) {
        Ok(record) => {
            let kept = match record.str(fields::SESSION_ID).filter(|id| !id.is_empty()) {
                Some(conversation) => state::save_locked(
                    &session::ended_path(seed, conversation),
                    &record,
                    &lock,
                    Durability::Durable,
                ),
                None => Ok(()),
            };
            kept.map(|()| {
                let _ = fs::remove_file(seed);
                let _ = fs::remove_file(carry_path(seed));
            })
        }
        Err(StateError::Missing { .. }) => Ok(()),
        Err(err) => Err(err),
    };
    lock.release();
    result
}

/// Sweep `<sessions_dir>/.seeds`: the seeds of dead processes (or of an earlier process that
/// had the same PID) are retired as their own `SessionEnd` would have done, the records of
/// ended processes go once [`session::ENDED_RETENTION`] old, and leftover temporary files go.
/// Returns how many seeds and records were removed. Corrupt seeds are left for
/// `preload doctor`; a seed whose lock is not taken by `deadline` waits for the next sweep.
pub fn sweep_seeds(sessions_dir: &Path, deadline: Instant) -> usize {
    let dir = sessions_dir.join(SEEDS_DIR);
    let Ok(entries) = fs::read_dir(&dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.contains(".tmp.") || Path::new(&name).extension().is_none_or(|e| e != "json") {
            // Temporaries of killed writers: swept below.
            continue;
        }
        if let Some(stem) = name.strip_suffix(".carry.json") {
            // A carry goes with its seed (retired below); one left by an activator that
            // removed the seed goes when its process is gone.
            if !dir.join(format!("{stem}.json")).exists() && session::seed_is_stale(&path) {
                let _ = fs::remove_file(&path);
            }
            continue;
        }
        let gone = if name.ends_with(ENDED_SUFFIX) {
            // Kept as long as the client keeps the conversation's transcript.
            session::ended_record_expired(&path) && fs::remove_file(&path).is_ok()
        } else {
            session::seed_is_stale(&path) && retire_seed(&path, deadline).is_ok()
        };
        removed += usize::from(gone);
    }
    file::remove_orphans(&dir);
    removed
}
