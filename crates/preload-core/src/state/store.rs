//! The state files on disk: read, written atomically, and changed under the lock.

use std::cell::Cell;
use std::fs;
use std::io;
use std::path::Path;
use std::time::Instant;

use super::{MAX_STATE_BYTES, State, StateError};
use crate::primitives::bytes;
use crate::primitives::file::{self, ReadError};
use crate::primitives::lock::{LockError, StateLock};

/// Read and parse a state file (a regular file of at most [`MAX_STATE_BYTES`]; a directory,
/// FIFO or device in its place is reported as corrupt without blocking).
pub fn load(path: &Path) -> Result<State, StateError> {
    load_read(path).map(|read| read.state)
}

/// A state as read from its file, with the text it was read from.
#[derive(Debug, Clone)]
pub struct Read {
    /// The state.
    pub state: State,
    /// The file's text.
    pub text: String,
}

/// [`load`], keeping the text read (for [`Write::from_read`]).
pub fn load_read(path: &Path) -> Result<Read, StateError> {
    let text = load_text(path)?;
    let state = parse_read(path, &text)?;
    Ok(Read { state, text })
}

/// The text of the state file at `path`, as [`load`] reads it.
fn load_text(path: &Path) -> Result<String, StateError> {
    let corrupt = |reason: String| StateError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = match file::read_regular(path, MAX_STATE_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::TooLarge { size, .. }) => {
            return Err(corrupt(format!(
                "{size} bytes, more than the {MAX_STATE_BYTES} read"
            )));
        }
        Err(ReadError::Unavailable { .. }) => {
            return Err(match fs::metadata(path) {
                Err(err) if err.kind() == io::ErrorKind::NotFound => StateError::Missing {
                    path: path.to_path_buf(),
                },
                Ok(meta) if !meta.is_file() => corrupt("not a regular file".into()),
                Ok(_) => StateError::Io {
                    action: "read",
                    path: path.to_path_buf(),
                    source: io::Error::other("cannot open"),
                },
                Err(source) => StateError::Io {
                    action: "read",
                    path: path.to_path_buf(),
                    source,
                },
            });
        }
    };
    String::from_utf8(bytes).map_err(|_| corrupt("not UTF-8".into()))
}

/// The state `text`, read from `path`, holds.
fn parse_read(path: &Path, text: &str) -> Result<State, StateError> {
    State::parse(text).map_err(|err| StateError::Corrupt {
        path: path.to_path_buf(),
        reason: err.to_string(),
    })
}

thread_local! {
    static COMMIT_BY: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Refuse, on this thread, every state write that would land after `deadline`.
///
/// The runner sets the call's deadline on its worker thread: once the runner has given up and
/// answered (fail-open), a late claim or drain is never committed, so what it took stays
/// queued instead of being marked delivered with nobody to deliver it.
pub fn commit_before(deadline: Option<Instant>) {
    COMMIT_BY.with(|by| by.set(deadline));
}

/// What a state write promises after the machine goes down (docs/reliability.md). Either way
/// the new version is written to a temporary beside the file and renamed over it, so a process
/// killed or crashed at any point leaves the old version or the new one, never a torn or empty
/// file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Not synced before the rename: a power cut may lose the latest calls' writes (their
    /// claims and counts), as `SQLite` in WAL mode with `synchronous=NORMAL` may. Every write a
    /// tool call makes.
    PerCall,
    /// Synced (`fdatasync`) before the rename, so a power cut leaves the old or the new version:
    /// activation, phase changes, the seeds SessionStart writes and the hand-over of a session.
    Durable,
}

impl Durability {
    /// The options of the one atomic write for a state written with this promise.
    fn options(self) -> file::WriteOptions {
        file::WriteOptions {
            sync: self == Self::Durable,
            ..file::WriteOptions::DURABLE
        }
    }
}

/// Write `state` to `path` atomically: a temporary file in the same directory, synced as
/// `durability` says, renamed over `path`.
///
/// Refused with [`StateError::Late`] once this thread's commit deadline ([`commit_before`])
/// has passed.
pub fn save(path: &Path, state: &State, durability: Durability) -> Result<(), StateError> {
    publish(path, &state.to_pretty(), durability, || true).map(|_| ())
}

/// [`save`] of a state of `fields`, in order ([`State::pretty_of`]).
pub fn save_fields(
    path: &Path,
    fields: &[(&str, super::Field<'_>)],
    durability: Durability,
) -> Result<(), StateError> {
    publish(path, &State::pretty_of(fields), durability, || true).map(|_| ())
}

/// [`save`] under `lock`, refused when the lock was taken from under its holder meanwhile
/// (the engine's racy reclaim): the new holder's write is never raced.
pub fn save_locked(
    path: &Path,
    state: &State,
    lock: &StateLock,
    durability: Durability,
) -> Result<(), StateError> {
    save_text_locked(path, &state.to_pretty(), lock, durability)
}

/// [`save_locked`] of a state already rendered ([`State::to_pretty`]).
fn save_text_locked(
    path: &Path,
    text: &str,
    lock: &StateLock,
    durability: Durability,
) -> Result<(), StateError> {
    // Checked as late as possible: right before the rename that publishes the new version.
    if publish(path, text, durability, || lock.still_held())? {
        Ok(())
    } else {
        Err(StateError::Lock(LockError::Lost {
            path: lock.path().to_path_buf(),
        }))
    }
}

/// The one write of a state's text: refused once this thread's commit deadline
/// ([`commit_before`]) has passed; published only when `still_ok` holds right before the
/// rename (false when it did not).
fn publish(
    path: &Path,
    text: &str,
    durability: Durability,
    still_ok: impl FnOnce() -> bool,
) -> Result<bool, StateError> {
    if COMMIT_BY
        .with(Cell::get)
        .is_some_and(|by| Instant::now() >= by)
    {
        return Err(StateError::Late {
            path: path.to_path_buf(),
        });
    }
    Ok(file::write_atomic_with(
        path,
        text.as_bytes(),
        durability.options(),
        still_ok,
    )?)
}

/// Create `path` with `state` unless it already exists (durably: an activation's first write);
/// true when this call created it.
///
/// Uses the same lock as [`update`], so two creators cannot both win.
pub fn create_if_absent(path: &Path, state: &State, deadline: Instant) -> Result<bool, StateError> {
    let lock = StateLock::acquire(path, deadline)?;
    if fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    save_locked(path, state, &lock, Durability::Durable)?;
    Ok(true)
}

/// How [`update`] writes a state: by when its lock must be had, with which [`Durability`], from
/// which read, and whether it writes every time.
pub struct Write<'r, T> {
    deadline: Instant,
    durability: Durability,
    every_time: bool,
    from: Option<Known<'r, T>>,
}

/// A read made without the lock, and what the change makes of it.
struct Known<'r, T> {
    text: &'r str,
    made: Box<dyn FnOnce() -> Option<(State, T)> + 'r>,
}

impl<'r, T> Write<'r, T> {
    /// A write of a tool call ([`Durability::PerCall`]) whose lock is waited for until
    /// `deadline`.
    pub fn per_call(deadline: Instant) -> Self {
        Self::new(deadline, Durability::PerCall)
    }

    /// A durable write ([`Durability::Durable`]) whose lock is waited for until `deadline`.
    pub fn durable(deadline: Instant) -> Self {
        Self::new(deadline, Durability::Durable)
    }

    fn new(deadline: Instant, durability: Durability) -> Self {
        Self {
            deadline,
            durability,
            every_time: false,
            from: None,
        }
    }

    /// Written whether or not the change changed anything (SessionStart's re-seed of a new
    /// context window).
    #[must_use]
    pub fn every_time(self) -> Self {
        Self {
            every_time: true,
            ..self
        }
    }

    /// For a caller that read the state before, without the lock (`text`: the file's text
    /// then), and made of it what the change would: while the file still holds exactly that
    /// text, `known` gives the new state and the result, and the file is neither read into
    /// memory again nor parsed. `known` may decline (`None`); otherwise, or when the file
    /// changed meanwhile, the change runs on what the locked read finds.
    #[must_use]
    pub fn from_read(self, text: &'r str, known: impl FnOnce() -> Option<(State, T)> + 'r) -> Self {
        Self {
            from: Some(Known {
                text,
                made: Box::new(known),
            }),
            ..self
        }
    }

    /// The same write from a fresh read under the lock: what was read before is let go.
    #[must_use]
    pub fn fresh(self) -> Self {
        Self { from: None, ..self }
    }

    /// By when the lock must be had.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The write's promise.
    pub fn durability(&self) -> Durability {
        self.durability
    }
}

/// How an [`optimistic`] update went.
#[derive(Debug)]
pub enum Tried<T> {
    /// The change, tried on the unlocked read, changed nothing: no lock was taken and nothing
    /// written. The read as the trial left it, and the trial's result.
    Unchanged(State, T),
    /// It changed the state: written under the lock, or not at all when the lock could not be
    /// had in time (an error that [`StateError::is_late`] tells).
    Changed(Result<T, StateError>),
}

/// The optimistic update of a state read without the lock (`read`, the file's text `text`):
/// `change` is tried on the read first. When it changes nothing, no lock is taken. Otherwise
/// `commit` makes the update as `write` says (through [`update`], or an update built on it),
/// with the trial standing while the file still holds `text` and the change made again on the
/// locked read when it does not. `settle` runs under the lock before either stands (the
/// latest of what another file holds, say), never in the trial.
pub fn optimistic<'r, T: 'r>(
    read: State,
    text: &'r str,
    write: Write<'r, T>,
    change: &'r dyn Fn(&mut State) -> T,
    settle: &'r dyn Fn(&mut State),
    commit: impl FnOnce(Write<'r, T>, &dyn Fn(&mut State) -> T) -> Result<T, StateError>,
) -> Tried<T> {
    #[cfg(debug_assertions)]
    let before = read.clone();
    let mut trial = read;
    trial.mark_unchanged();
    let out = change(&mut trial);
    // The mark tells whether the change changed anything (a copy to compare with was, on a
    // large state, a tenth of a call); debug builds check it against such a copy.
    #[cfg(debug_assertions)]
    assert!(
        trial.changed() || trial == before,
        "the change changed the state without marking it"
    );
    if !trial.changed() {
        return Tried::Unchanged(trial, out);
    }
    let known = move || {
        settle(&mut trial);
        Some((trial, out))
    };
    let again = |s: &mut State| {
        settle(s);
        change(s)
    };
    Tried::Changed(commit(write.from_read(text, known), &again))
}

/// The one read-modify-write of a state file, under its lock from the read to the rename,
/// written as `write` says ([`Write`]).
///
/// `change` edits the state and returns a value; unless the write is [`Write::every_time`], the
/// file is rewritten only when the state changed (marked changed, and its text another). A
/// missing or corrupt file is an error and is never written.
pub fn update<T>(
    path: &Path,
    write: Write<'_, T>,
    change: impl FnOnce(&mut State) -> T,
) -> Result<T, StateError> {
    let Write {
        deadline,
        durability,
        every_time,
        from,
    } = write;
    let lock = StateLock::acquire(path, deadline)?;
    // The file still holds what was read: told without reading it again into fresh memory.
    if let Some(from) = from.filter(|from| file::holds(path, from.text.as_bytes())) {
        if let Some((state, out)) = (from.made)() {
            let rendered = state.to_pretty();
            if !bytes::same(rendered.as_bytes(), from.text.as_bytes()) {
                save_text_locked(path, &rendered, &lock, durability)?;
            }
            lock.release();
            crate::primitives::system::entry::release(state);
            return Ok(out);
        }
    }
    let text = load_text(path)?;
    let mut state = parse_read(path, &text)?;
    let out = change(&mut state);
    if every_time || state.changed() {
        let rendered = state.to_pretty();
        if every_time || !bytes::same(rendered.as_bytes(), text.as_bytes()) {
            save_text_locked(path, &rendered, &lock, durability)?;
        }
    }
    lock.release();
    crate::primitives::system::entry::release(state);
    Ok(out)
}
