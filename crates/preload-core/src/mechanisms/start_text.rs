//! The SessionStart text shared by the `--chunk I/N` registrations of one event: generated
//! once per conversation, source and client process under a lock, kept in a cache file the
//! other registrations read, and cut again when they are a different number of slots.
//!
//! The cache directory is a real directory of the current user's, mode 0700 (a symbolic link
//! or another user's directory is refused); cache files are read without following links and
//! only while fresh, and written by atomic rename, so a planted file is never written through.
//!
//! One registration generates, under an `flock` on the one of [`LOCK_STRIPES`] lock files kept
//! in the directory (`.lock-<nn>`) its key hashes to: the kernel drops it when its holder dies,
//! and no lock is created, renamed or removed per event (bash never touches these files). Two
//! unrelated events on one file wait for one generation at most.
//!
//! A cache file leads with where each slot ends, then holds the blocks as they are, each after
//! its length, so a registration reads and decodes only its own slot (the text is up to a few
//! hundred KB, and every registration but one reads it):
//!
//! ```text
//! preload-start-cache 2
//! <n: the registrations it was cut for>
//! <where each slot's bytes end in the body, n numbers parted by spaces>
//! the body, per slot: <blocks in the slot> LF, then per block: <bytes> LF <the block's bytes> LF
//! ```

use std::fs;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::primitives::clock;
use crate::primitives::delivery::{self, Packer};
use crate::primitives::env::{self, Env};
use crate::primitives::file::{self, WriteError};
use crate::primitives::input::HookInput;
use crate::primitives::lock::LockError;
use crate::primitives::markers::{self, MarkerDir, MarkerError};
use crate::primitives::process;
use crate::state::stamps;

/// A cache older than this is generated again: the N registrations of one event start within
/// moments of each other, and a later event of the same conversation, source and client process
/// (a second compaction) must not reuse it.
pub const FRESH: Duration = Duration::from_secs(10);
/// A temporary file older than this was left by a writer that died.
const TEMP_LEFTOVER: Duration = Duration::from_secs(60);
/// The most registrations one text is cut for.
pub const MAX_CHUNKS: usize = 1_000;
/// How many lock files the cache directory keeps ([`StartText::lookup`]).
pub const LOCK_STRIPES: u64 = 64;
/// The extension of cache files.
const EXTENSION: &str = "slots";

/// The blocks of each slot, in slot order.
pub type Slots = Vec<Vec<String>>;

/// Why the shared text could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StartTextError {
    /// A `--chunk` value that is not `I/N` with `I < N <= 1000`.
    #[error("bad --chunk value {value:?}; expected I/N with I < N <= {MAX_CHUNKS}")]
    Chunk {
        /// The value given.
        value: String,
    },
    /// The cache directory is unusable (a link, another user's, or not creatable).
    #[error("cannot use cache directory {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: MarkerError,
    },
    /// The cache's lock could not be taken.
    #[error("cannot lock cache {path}: {source}")]
    Lock {
        /// The cache file.
        path: PathBuf,
        /// Why.
        source: LockError,
    },
    /// The generated text could not be written (the error names the cache file).
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// `--chunk I/N`: print slice `index` of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Which slice (0-based).
    pub index: usize,
    /// How many registrations share the text.
    pub total: usize,
}

/// Parse `--chunk I/N` (or `--chunk=I/N`) out of `args`; `None` without one.
pub fn parse_chunk(args: &[String]) -> Result<Option<Chunk>, StartTextError> {
    let mut value = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--chunk" {
            value = Some(iter.next().cloned().unwrap_or_default());
        } else if let Some(v) = arg.strip_prefix("--chunk=") {
            value = Some(v.to_owned());
        }
    }
    let Some(value) = value else { return Ok(None) };
    let parsed = value
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((index, total)) if total > 0 && index < total && total <= MAX_CHUNKS => {
            Ok(Some(Chunk { index, total }))
        }
        _ => Err(StartTextError::Chunk { value }),
    }
}

/// The cache directory: `PRELOAD_CACHE_DIR`, else `${TMPDIR:-/tmp}/claude-preload-<uid>`.
pub fn cache_dir(env: &Env) -> PathBuf {
    env.get(env::PRELOAD_CACHE_DIR)
        .map_or_else(|| markers::user_dir(env), PathBuf::from)
}

/// The cache key: `<session_id>_<source>_<owner>-<started>` with characters outside
/// `[A-Za-z0-9._-]` as `_`.
///
/// The key names the conversation, the source and the client process that owns the event
/// (`owner`, the product's one answer to "which Claude process is this", [`crate::primitives::paths::owner_pid`],
/// with its start time), so one run's text is never served to another: a `--resume` of the same
/// conversation is a new client process. It never depends on how each registration was
/// started: registrations spawned through different wrappers (`timeout`, a supervisor) share it,
/// so the event's text is generated once and every slot of it goes out.
pub fn cache_key(input: &HookInput, owner: u32) -> String {
    let started = process::start_time(owner).unwrap_or(0);
    let raw = format!(
        "{}_{}_{owner}-{started}",
        input.session_id().unwrap_or("nosession"),
        input.source().unwrap_or("startup")
    );
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The lock file in the cache directory `dir` that the registrations of the event `key`
/// (a [`cache_key`]) take: the one of [`LOCK_STRIPES`] its hash picks.
pub fn lock_file(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!(".lock-{:02}", stripe(key)))
}

fn stripe(key: &str) -> u64 {
    stamps::words_hash(key.as_bytes()) % LOCK_STRIPES
}

/// One event's SessionStart text, shared by its registrations: the cache file and its lock.
#[derive(Debug)]
pub struct StartText {
    dir: PathBuf,
    path: PathBuf,
    lock: PathBuf,
}

/// What a look-up found.
#[derive(Debug)]
pub enum Lookup {
    /// The slot asked for: its blocks, cut for the registrations asked for.
    Found(Vec<String>),
    /// No usable cache: this registration generates the text and hands it to the writer,
    /// which holds the cache's lock until then.
    Missing(Writer),
}

/// The one registration that writes the text; the lock goes with it. Dropped, it lets go of
/// the lock, which wakes the registrations waiting for it, whether the text was written or not.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    /// Held, never read: the lock lasts as long as the writer.
    _lock: Flock<fs::File>,
}

impl StartText {
    /// The cache of `input`'s event in the client process `owner`, its directory made when
    /// missing.
    pub fn open(env: &Env, input: &HookInput, owner: u32) -> Result<Self, StartTextError> {
        let dir = cache_dir(env);
        MarkerDir::at(&dir, true).map_err(|source| StartTextError::Directory {
            path: dir.clone(),
            source,
        })?;
        let key = cache_key(input, owner);
        let lock = lock_file(&dir, &key);
        let path = dir.join(format!("{key}.{EXTENSION}"));
        Ok(Self { dir, path, lock })
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Slot `chunk.index` of the text cut for `chunk.total` slots of `budget` characters: from
    /// the cache when it is fresh; else, when another registration holds the cache's lock
    /// (it is making the text), from the cache it wrote once it lets go; else a [`Writer`].
    ///
    /// A waiter sleeps in a blocking shared `flock`: the kernel wakes every waiter at once when
    /// the generator lets go, or dies. A generator that let go without writing the text is
    /// taken over by one waiter at a time, each under the lock taken whole. The wait has no
    /// bound of its own: a hook process's watchdog answers for it at its deadline, as for any
    /// other call that runs out of time.
    ///
    /// The last registration first sweeps stale caches and leftovers from the directory (only
    /// files past their freshness, so it needs no lock): it does so while the first one
    /// generates the text, off the path the event waits on. A registration alone does it too.
    pub fn lookup(&self, chunk: Chunk, budget: usize) -> Result<Lookup, StartTextError> {
        if chunk.index + 1 == chunk.total {
            sweep(&self.dir);
        }
        if let Some(blocks) = codec::read(&self.path, chunk, budget) {
            return Ok(Lookup::Found(blocks));
        }
        let unusable = |source: std::io::Error| StartTextError::Lock {
            path: self.path.clone(),
            source: LockError::Create {
                path: self.lock.clone(),
                source,
            },
        };
        let failed = |(_, errno): (fs::File, Errno)| unusable(errno.into());
        let file = open_lock(&self.lock).map_err(unusable)?;
        let lock = match take(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((file, Errno::EWOULDBLOCK)) => {
                // Another registration makes the text: wait until it lets go.
                if let Some(blocks) = codec::read(&self.path, chunk, budget) {
                    return Ok(Lookup::Found(blocks));
                }
                let shared = take(file, FlockArg::LockShared).map_err(failed)?;
                if let Some(blocks) = codec::read(&self.path, chunk, budget) {
                    return Ok(Lookup::Found(blocks));
                }
                let file = shared
                    .unlock()
                    .map_err(|(_, errno)| unusable(errno.into()))?;
                take(file, FlockArg::LockExclusive).map_err(failed)?
            }
            Err(err) => return Err(failed(err)),
        };
        if let Some(blocks) = codec::read(&self.path, chunk, budget) {
            return Ok(Lookup::Found(blocks));
        }
        Ok(Lookup::Missing(Writer {
            path: self.path.clone(),
            _lock: lock,
        }))
    }
}

/// `file` locked as `how` says, tried again when a signal cut the wait short.
fn take(mut file: fs::File, how: FlockArg) -> Result<Flock<fs::File>, (fs::File, Errno)> {
    loop {
        match Flock::lock(file, how) {
            Err((back, Errno::EINTR)) => file = back,
            other => return other,
        }
    }
}

/// The lock file at `path`, opened (made private to the user when missing); never a link.
fn open_lock(path: &Path) -> std::io::Result<fs::File> {
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(file::NO_FOLLOW_NONBLOCK)
        .open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::other("not a regular file"))
    }
}

impl Writer {
    /// Write the text generated for the registrations, a slot each, and release the lock.
    pub fn write(self, slots: &Slots) -> Result<(), StartTextError> {
        Ok(file::write_cache(&self.path, &codec::encode(slots))?)
    }
}

/// Remove caches older than the freshness window, leftover temporary files, and what earlier
/// builds kept there: (past that window) their lock directories (`<key>.slots.lock`, the spare:
/// a `pid` each) and the named pipes their waiters slept on (`.wake-<nn>`).
fn sweep(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let age = meta.modified().ok().map(clock::age).unwrap_or_default();
        // `.json`: caches of earlier builds, which kept the text as JSON.
        let old_cache = Path::new(&name)
            .extension()
            .is_some_and(|e| e == EXTENSION || e == "json")
            && age > FRESH;
        let old_temp = name.contains(".tmp.") && age > TEMP_LEFTOVER;
        let old_pipe = name.starts_with(".wake-") && meta.file_type().is_fifo();
        if (meta.is_file() && (old_cache || old_temp)) || old_pipe {
            let _ = fs::remove_file(entry.path());
        }
        let old_lock = Path::new(&name).extension().is_some_and(|e| e == "lock")
            || name == crate::primitives::lock::SPARE;
        if meta.is_dir() && old_lock && age > FRESH {
            let _ = fs::remove_file(entry.path().join("pid"));
            let _ = fs::remove_dir(entry.path());
        }
    }
}

/// Slices cut for `n` registrations, cut again for `total` when the two differ.
pub fn reslice(n: usize, slots: Slots, total: usize, budget: usize) -> Slots {
    if n == total {
        return slots;
    }
    let mut packer = Packer::slots(&vec![budget; total]);
    let mut left = 0;
    for block in slots.into_iter().flatten() {
        if !packer.try_add(block) {
            left += 1;
        }
    }
    let mut out = packer.into_slot_blocks();
    if left > 0 {
        if let Some(last) = out.last_mut() {
            // Make room for the pointer in the last slot.
            while !last.is_empty() && delivery::chars(&delivery::join_blocks(last)) + 200 > budget {
                last.pop();
                left += 1;
            }
            last.push(format!(
                "[preload overflow: {left} more block(s) did not fit {total} SessionStart slots]"
            ));
        }
    }
    out
}

mod codec;
#[cfg(test)]
mod tests;
