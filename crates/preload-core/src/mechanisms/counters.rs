//! The tool-call counters of a session (the heartbeat), kept where the engine's writers cannot
//! overwrite them.
//!
//! `session.sh` reads `.state.json` outside the lock and writes it back under the lock, so a
//! counter a hook wrote in between is lost. The counters are therefore also kept in
//! `<session>/.preload-counters.json`, which only native hooks write, each under the session
//! directory's latch (never the engine's lock, so a bash writer never delays a count), with a
//! sequence number bumped on every change. The state holds them where the engine reads them
//! (`toolCallsByTranscript`, `toolCallsSinceLastLog`, `primaryTranscriptKey`,
//! `lastEditFile_<key>`) together with the sequence number they were written at
//! (`preloadCountersSeq`).
//!
//! The state's values stand, as the engine and its tools expect, except when they carry an
//! older sequence number than the file (or none) within the same *epoch* (the state's
//! `startedAt`, owner, phase history length and phase): then they were written back from a
//! stale read (or the last count could not be written to the state yet), and the file's values
//! stand. The engine's own resets (a phase change, a fresh or continued session) change the
//! epoch; an edit of the counters on the current state (which keeps its sequence number)
//! stands.
//!
//! A hook that cannot take the latch in time does not drop its count: it appends the change
//! ([`Delta`], with an id) to the session's counters journal (`.preload-counters.journal`, see
//! [`crate::primitives::journal`]) and answers; the next holder of the latch folds the journal in, writes the
//! counters, then empties the journal. The ids folded by the last write are kept in the counters
//! file, so a holder killed between the two writes is never counted twice. Every reader of the
//! counters ([`current`], [`update`]) sees the journal's records not yet folded.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::primitives::file;
use crate::primitives::journal;
use crate::primitives::lock::Latch;
use crate::state::fields;
use crate::state::stamps;
use crate::state::{CounterMirror, Keyed, Phase, State, StateError, lenient, lenient_strings};

mod delta;
pub use delta::Delta;
use delta::{Record, record_id};

/// The counters file in a session directory.
pub const FILE: &str = ".preload-counters.json";
/// The journal of counts not yet folded into [`FILE`], in a session directory.
pub const JOURNAL: &str = ".preload-counters.journal";
/// The part of a call's time kept for the journal: the latch is waited for until this long
/// before the call's last instant, and a holder waits at most this long for appenders to finish.
pub const JOURNAL_WAIT: Duration = Duration::from_millis(50);

/// Largest counters file read.
const MAX_BYTES: u64 = 1024 * 1024;

/// The counters of one session, written as the counters file's members (after its `check`).
/// Read from the file, a member in a shape its type does not take reads as absent and the
/// others stand; a file without an `epoch` holds none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    epoch: String,
    #[serde(default, deserialize_with = "lenient")]
    seq: u64,
    #[serde(default, deserialize_with = "lenient")]
    counts: Keyed<u64>,
    #[serde(default, deserialize_with = "lenient")]
    last_edit: Keyed<String>,
    #[serde(default, deserialize_with = "lenient")]
    primary: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    since_last_log: u64,
    /// The ids of the journal records the last write folded in.
    #[serde(default, deserialize_with = "lenient_strings")]
    applied: Vec<String>,
    /// Holds journal records no holder has folded in yet: fit to decide on, never to write.
    #[serde(skip)]
    pending: bool,
}

/// The epoch a state counts in: when it was created, its owner, how many phases it went
/// through, its phase.
pub fn epoch_of(state: &State) -> String {
    let history = state.items(fields::PHASE_HISTORY).len();
    format!(
        "{}|{}|{history}|{}",
        state.str(fields::STARTED_AT).unwrap_or(""),
        state.pid(fields::PID).unwrap_or(0),
        state.current_phase().map_or("", Phase::as_str)
    )
}

/// The counters file of the session whose state is `state_file`.
pub fn file_of(state_file: &Path) -> PathBuf {
    state_file.with_file_name(FILE)
}

/// The counters journal of the session whose state is `state_file`.
pub fn journal_of(state_file: &Path) -> PathBuf {
    state_file.with_file_name(JOURNAL)
}

impl Counters {
    /// The state's own values (its mirror, or the engine's after a reset), in `state`'s epoch.
    fn from_state(state: &State) -> Self {
        let mirror = state.counter_mirror();
        Self {
            epoch: epoch_of(state),
            seq: mirror.seq.unwrap_or(0),
            counts: mirror.counts,
            last_edit: mirror.last_edit,
            primary: mirror.primary,
            since_last_log: mirror.since_last_log.unwrap_or(0),
            applied: Vec::new(),
            pending: false,
        }
    }

    /// The counters of the session whose state is `state` (read from `state_file`): the file's
    /// when the state's are older ones of the same epoch, else the state's own (numbered on
    /// from the file's).
    pub fn read(state_file: &Path, state: &State) -> Self {
        let kept = read_checked(&file_of(state_file));
        let mut own = Self::from_state(state);
        match kept {
            Some(kept) if kept.epoch == own.epoch && own.seq < kept.seq => kept,
            Some(kept) => {
                own.seq = own.seq.max(kept.seq);
                own.applied = kept.applied;
                own
            }
            None => own,
        }
    }

    /// Fold journal records in, skipping those the last write already folded; returns whether
    /// any changed the counters. `applied` becomes the ids of `records`.
    fn fold(&mut self, records: Vec<Record>) -> bool {
        let before = self.clone();
        let mut ids = Vec::with_capacity(records.len());
        for Record { id, delta } in records {
            if !self.applied.contains(&id) {
                delta.apply(self);
            }
            ids.push(id);
        }
        self.applied = ids;
        self.counts != before.counts
            || self.last_edit != before.last_edit
            || self.primary != before.primary
            || self.since_last_log != before.since_last_log
    }

    /// True when these counters hold counts only the journal has: a state written with them
    /// would count those twice once they are folded in.
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// The counter of `key`.
    pub fn get(&self, key: &str) -> u64 {
        self.counts.get(key).copied().unwrap_or(0)
    }

    /// Count one call of `tool` by the agent of `key` (`main` for the main agent), with the
    /// engine's same-file Edit suppression: an Edit of the file the last Edit of this agent
    /// touched does not count. True when counted.
    pub fn count(&mut self, key: &str, main: bool, tool: &str, edited: Option<&str>) -> bool {
        let previous = self.last_edit.get(key).map(String::as_str);
        let suppress =
            tool == "Edit" && edited.is_some_and(|f| !f.is_empty() && previous == Some(f));
        if tool == "Edit" {
            self.last_edit.insert(key, edited.unwrap_or("").to_owned());
        } else {
            self.last_edit.remove(key);
        }
        if suppress {
            return false;
        }
        let next = self.get(key).saturating_add(1);
        self.counts.insert(key, next);
        if main {
            self.since_last_log = next;
            if self.primary.is_none() {
                self.primary = Some(key.to_owned());
            }
        }
        true
    }

    /// `engine log`: the agent of `key` starts over (the main agent's displayed count too).
    pub fn reset(&mut self, key: &str, main: bool) {
        self.counts.insert(key, 0);
        if main {
            self.since_last_log = 0;
        }
    }

    /// Write the counters into a state: the engine's fields, as it would have written them
    /// (the main agent's displayed count once there are counts, or when the state shows one).
    /// True when that changed the state.
    pub fn mirror(&self, state: &mut State) -> bool {
        let shown =
            !self.counts.is_empty() || state.number(fields::TOOL_CALLS_SINCE_LAST_LOG).is_some();
        state.set_counter_mirror(&CounterMirror {
            counts: self.counts.clone(),
            since_last_log: shown.then_some(self.since_last_log),
            primary: self.primary.clone(),
            last_edit: self.last_edit.clone(),
            seq: Some(self.seq),
        })
    }
}

/// Mirror into `state` (the session's state, read under its lock) the counters as they are
/// now. The lock holds the session directory's latch, so no count is being made and the file
/// has every count so far: a count made after the caller's own (whose mirror write found the
/// lock busy) is mirrored too, and an older count never overwrites a newer one. The journal's
/// records stay out (a state holding them would count them twice once they are folded).
/// True when that changed the state.
pub fn mirror_latest(state_file: &Path, state: &mut State) -> bool {
    Counters::read(state_file, state).mirror(state)
}

/// The counters of the session whose state is `state_file` (read as `state`), with the
/// journal's records not yet folded in.
pub fn current(state_file: &Path, state: &State) -> Counters {
    let mut counters = Counters::read(state_file, state);
    let unfolded = delta::records(journal::read(&journal_of(state_file)));
    counters.pending = counters.fold(unfolded);
    counters
}

/// Apply `delta` to the counters of the session whose state is `state_file` (read as
/// `state`) and return them after it. Under the session directory's latch (waited for until
/// `deadline`, and no later than [`JOURNAL_WAIT`] before `last`) the journal is folded in with
/// it and emptied; when the latch cannot be had, the delta goes to the journal (waited for until
/// `last` while a holder folds it) for the next holder, and the counters returned are
/// [`Counters::pending`].
pub fn update(
    state_file: &Path,
    state: &State,
    deadline: Instant,
    last: Instant,
    delta: &Delta,
) -> Result<Counters, StateError> {
    let latch_deadline = deadline.min(last.checked_sub(JOURNAL_WAIT).unwrap_or(last));
    let Ok(latch) = Latch::take(state_file, latch_deadline) else {
        let journal = journal_of(state_file);
        let failed = |source: std::io::Error| StateError::Io {
            action: "journal a count in",
            path: journal.clone(),
            source,
        };
        let record = Record {
            id: record_id(),
            delta: delta.clone(),
        };
        let line = serde_json::to_value(&record).map_err(|err| failed(err.into()))?;
        journal::append(&journal, &line, last).map_err(|err| failed(std::io::Error::other(err)))?;
        return Ok(current(state_file, state));
    };
    let journal = journal_of(state_file);
    // A journal whose appenders outstay the deadline is folded by a later holder.
    let taken = journal::take(&journal, (Instant::now() + JOURNAL_WAIT).min(last)).ok();
    let mut counters = Counters::read(state_file, state);
    let before = counters.clone();
    if let Some(taken) = &taken {
        counters.fold(delta::records(&taken.records));
    }
    delta.apply(&mut counters);
    if counters != before {
        counters.seq = before.seq + 1;
        let path = file_of(state_file);
        let text = checked_text(&counters).map_err(|err| StateError::Io {
            action: "encode",
            path: path.clone(),
            source: std::io::Error::other(err),
        })?;
        // Under the latch, the temporary's name is fixed: a writer killed here leaves one the
        // next writer takes, and no lock that would make a sweep of the directory find it. It
        // is written in place and exchanged with the file, hence the check of every read.
        let options = file::WriteOptions {
            held_temp: latch.is_held(),
            ..file::WriteOptions::CACHE
        };
        file::write_atomic_with(&path, text.as_bytes(), options, || true)?;
    }
    // Emptied only once the counters that hold its records are written.
    if let Some(taken) = taken {
        let _ = taken.empty();
    }
    drop(latch);
    Ok(counters)
}

/// How a counters file begins: its first member, `check`, is the hash of the text after it.
const CHECK_HEAD: &str = "{\n  \"check\": \"";
/// Reads of a counters file that came out torn before it is taken to be unreadable.
const READS: usize = 3;

/// The text of a counters file: pretty JSON led by `check`, the hash ([`stamps::words_hash`])
/// of the text after that member. The file is replaced by exchanging it with the previous
/// version, which the next write overwrites in place ([`file::WriteOptions::held_temp`]): a
/// reader that opened the file before an exchange and reads it during that write can read two
/// versions at once, and the hash tells such a read from a whole one.
fn checked_text(counters: &Counters) -> serde_json::Result<String> {
    let pretty = serde_json::to_string_pretty(counters)?;
    let rest = format!("{}\n", pretty.strip_prefix('{').unwrap_or(&pretty));
    let hash = stamps::words_hash(rest.as_bytes());
    Ok(format!("{CHECK_HEAD}{hash:016x}\",{rest}"))
}

/// True when `text` is a whole counters file: its `check` is its hash, or it has none (written
/// by an earlier release, which replaced the file by a rename and never in place).
fn is_whole(text: &str) -> bool {
    let Some(after) = text.strip_prefix(CHECK_HEAD) else {
        return true;
    };
    let Some((hex, rest)) = after.split_at_checked(16) else {
        return false;
    };
    rest.strip_prefix("\",").is_some_and(|rest| {
        u64::from_str_radix(hex, 16).is_ok_and(|hash| hash == stamps::words_hash(rest.as_bytes()))
    })
}

/// The counters in the file at `path`, read again when a read came out torn ([`is_whole`]);
/// `None` when it is missing, unreadable, not a JSON object of counters, or torn [`READS`]
/// times in a row.
fn read_checked(path: &Path) -> Option<Counters> {
    for _ in 0..READS {
        let text = file::read_text(path, MAX_BYTES)?;
        if !is_whole(&text) {
            continue;
        }
        // An object only: the derived reader would take an array's items for the members.
        if !text.trim_start().starts_with('{') {
            return None;
        }
        return serde_json::from_str(&text).ok();
    }
    None
}

#[cfg(test)]
mod tests;
