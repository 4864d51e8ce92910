//! What a compacted handler, worker or loop session must re-read: the session types, their
//! detection from the registrations `/handler` and `/loop` leave, the one-shot compaction
//! marker that carries the type from `PreCompact` to the next event, and the files to re-read.
//!
//! Registrations and compaction markers live in the per-user marker directory
//! ([`crate::primitives::markers`]); the legacy hooks' markers in the legacy directory are read too (own
//! regular files only, never through a link).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::mechanisms::context::Context;
use crate::mechanisms::work_files::{self, HANDLER_STATE};
use crate::primitives::clock;
use crate::primitives::markers::{self, MarkerDir, MarkerError};
use crate::state::lenient;

/// Prefix of the handler registration marker.
pub const HANDLER_PREFIX: &str = "handler";
/// Prefix of the loop registration marker.
pub const LOOP_PREFIX: &str = "loop";
/// Prefix of the one-shot compaction marker.
pub const COMPACTION_PREFIX: &str = "compaction";
/// Prefix of the legacy handler marker in the legacy directory.
pub const LEGACY_HANDLER_PREFIX: &str = "claude-handler";
/// Prefix of the legacy loop marker in the legacy directory.
pub const LEGACY_LOOP_PREFIX: &str = "claude-loop";
/// The legacy global handler marker written by the handler skill.
pub const LEGACY_HANDLER_ACTIVE: &str = "claude-handler-active";
/// Leftovers of crashed marker writers older than this are swept when a marker is left.
const SWEEP_AGE: Duration = Duration::from_secs(600);

/// Why a registration or a compaction marker could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum RereadError {
    /// The marker directory or a marker in it (the message names the path).
    #[error(transparent)]
    Marker(#[from] MarkerError),
    /// A marker or a registration could not be written as JSON (nothing was written).
    #[error("a marker could not be written as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// What a compacted session must re-read; the content of the compaction marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reread {
    /// A handler: `handler-state.md` and the active dispatch files of `dir` (when known).
    Handler {
        /// The directory holding `handler-state.md` and `handler-dispatches/`.
        dir: Option<PathBuf>,
    },
    /// A worker: its dispatch file (contract plus `## Progress`).
    Worker {
        /// The dispatch file.
        dispatch_file: PathBuf,
    },
    /// A loop: the active loop document (when one was found).
    Loop {
        /// The newest non-archived `*.loop.md`.
        loop_file: Option<PathBuf>,
        /// Where it was looked for.
        loops_dir: PathBuf,
    },
}

/// The compaction marker as written: the session type as `type`, then its paths (`null` for
/// one not known). Read back, a path that is not absolute, or not text, reads as not known;
/// members it does not name are ignored.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Marker {
    Handler {
        #[serde(default, deserialize_with = "absolute", serialize_with = "lossy")]
        handler_dir: Option<PathBuf>,
    },
    Worker {
        #[serde(default, deserialize_with = "absolute", serialize_with = "lossy")]
        dispatch_file: Option<PathBuf>,
    },
    Loop {
        #[serde(default, deserialize_with = "absolute", serialize_with = "lossy")]
        loop_file: Option<PathBuf>,
        #[serde(default, deserialize_with = "absolute", serialize_with = "lossy")]
        loops_dir: Option<PathBuf>,
    },
}

/// A registration as written: the `cwd` of the call that registered, and when.
#[derive(Serialize, Deserialize)]
struct Registration {
    #[serde(default, deserialize_with = "absolute", serialize_with = "lossy")]
    cwd: Option<PathBuf>,
    #[serde(skip_deserializing)]
    registered: String,
}

/// A path member read back: an absolute path, else none.
fn absolute<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<PathBuf>, D::Error> {
    let text: Option<String> = lenient(deserializer)?;
    Ok(text.filter(|t| t.starts_with('/')).map(PathBuf::from))
}

/// A path member written: its text, bytes that are not UTF-8 replaced; `null` for none.
#[allow(clippy::ref_option)]
fn lossy<S: Serializer>(path: &Option<PathBuf>, serializer: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => serializer.serialize_str(&path.to_string_lossy()),
        None => serializer.serialize_none(),
    }
}

impl Reread {
    /// The marker's JSON.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let marker = match self.clone() {
            Self::Handler { dir } => Marker::Handler { handler_dir: dir },
            Self::Worker { dispatch_file } => Marker::Worker {
                dispatch_file: Some(dispatch_file),
            },
            Self::Loop {
                loop_file,
                loops_dir,
            } => Marker::Loop {
                loop_file,
                loops_dir: Some(loops_dir),
            },
        };
        serde_json::to_string(&marker)
    }

    /// Read a marker; `None` when it is not one of ours.
    pub fn from_json(bytes: &[u8]) -> Option<Self> {
        match serde_json::from_slice(bytes).ok()? {
            Marker::Handler { handler_dir } => Some(Self::Handler { dir: handler_dir }),
            Marker::Worker { dispatch_file } => Some(Self::Worker {
                dispatch_file: dispatch_file?,
            }),
            Marker::Loop {
                loop_file,
                loops_dir,
            } => {
                let loops_dir = loops_dir
                    .or_else(|| {
                        loop_file
                            .as_deref()
                            .and_then(Path::parent)
                            .map(Path::to_path_buf)
                    })
                    .unwrap_or_else(|| PathBuf::from("docs/loops"));
                Some(Self::Loop {
                    loop_file,
                    loops_dir,
                })
            }
        }
    }

    /// The type's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Handler { .. } => "handler",
            Self::Worker { .. } => "worker",
            Self::Loop { .. } => "loop",
        }
    }
}

/// The `cwd` a registration recorded: a JSON object's `cwd`, or an absolute path as text
/// (the legacy hooks' format).
pub fn registered_cwd(bytes: &[u8]) -> Option<PathBuf> {
    if let Ok(registration) = serde_json::from_slice::<Registration>(bytes) {
        return registration.cwd;
    }
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().next()?.trim();
    line.starts_with('/').then(|| PathBuf::from(line))
}

/// Register the session `sid` under `prefix` ([`HANDLER_PREFIX`] or [`LOOP_PREFIX`]),
/// recording this call's `cwd`; nothing when `sid` is not a plain name.
pub fn register(ctx: &Context, prefix: &str, sid: &str) -> Result<(), RereadError> {
    let Some(name) = markers::marker_name(prefix, sid) else {
        return Ok(());
    };
    let record = Registration {
        cwd: Some(ctx.cwd.clone()),
        registered: clock::iso_utc(ctx.now),
    };
    let bytes = serde_json::to_vec(&record)?;
    MarkerDir::open(&ctx.env)?.write(&name, &bytes)?;
    Ok(())
}

/// A registration of `prefix` for `sid`: ours first, then the legacy one (own regular files
/// only, never through a link).
fn registration(
    ctx: &Context,
    dir: &MarkerDir,
    prefix: &str,
    legacy_prefix: &str,
    sid: &str,
) -> Result<Option<Vec<u8>>, RereadError> {
    if let Some(name) = markers::marker_name(prefix, sid) {
        if let Some(bytes) = dir.read(&name)? {
            return Ok(Some(bytes));
        }
    }
    Ok(markers::marker_name(legacy_prefix, sid).and_then(|name| {
        markers::read_trusted(
            &markers::legacy_dir(&ctx.env).join(name),
            markers::current_uid(),
        )
        .ok()
        .flatten()
    }))
}

/// The most recently modified `*.loop.md` in `loops_dir` whose name does not end in
/// `-archived` (ties broken by name).
pub fn active_loop_file(loops_dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(loops_dir).ok()?;
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".loop.md")?;
            if stem.is_empty() || stem.ends_with("-archived") {
                return None;
            }
            let meta = std::fs::metadata(entry.path()).ok()?;
            meta.is_file()
                .then(|| (meta.modified().ok(), name, entry.path()))
        })
        .max_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)))
        .map(|(_, _, path)| path)
}

/// Detect the session type for `sid`: handler (registered, or the legacy global marker), worker
/// (a dispatch-path file), loop (registered); `None` for a regular session.
fn detect(ctx: &Context, dir: &MarkerDir, sid: &str) -> Result<Option<Reread>, RereadError> {
    let handler = match registration(ctx, dir, HANDLER_PREFIX, LEGACY_HANDLER_PREFIX, sid)? {
        Some(bytes) => Some(bytes),
        None => markers::read_trusted(
            &markers::legacy_dir(&ctx.env).join(LEGACY_HANDLER_ACTIVE),
            markers::current_uid(),
        )
        .ok()
        .flatten(),
    };
    if let Some(bytes) = handler {
        let cwd = registered_cwd(&bytes);
        return Ok(Some(Reread::Handler {
            dir: work_files::handler_dir(ctx, cwd.as_deref()),
        }));
    }
    if let Some(dispatch_file) = work_files::worker_dispatch_file(ctx) {
        return Ok(Some(Reread::Worker { dispatch_file }));
    }
    if let Some(bytes) = registration(ctx, dir, LOOP_PREFIX, LEGACY_LOOP_PREFIX, sid)? {
        let cwd = registered_cwd(&bytes).unwrap_or_else(|| ctx.cwd.clone());
        let loops_dir = cwd.join("docs").join("loops");
        return Ok(Some(Reread::Loop {
            loop_file: active_loop_file(&loops_dir),
            loops_dir,
        }));
    }
    Ok(None)
}

/// Detect the type of session `sid` and leave its one-shot compaction marker (sweeping the
/// leftovers of crashed writers first); the type, or `None` for a regular session and for a
/// `sid` that is not a plain name.
pub fn leave_marker(ctx: &Context, sid: &str) -> Result<Option<Reread>, RereadError> {
    let Some(name) = markers::marker_name(COMPACTION_PREFIX, sid) else {
        return Ok(None);
    };
    let dir = MarkerDir::open(&ctx.env)?;
    dir.sweep(SWEEP_AGE);
    let found = detect(ctx, &dir, sid)?;
    if let Some(reread) = &found {
        dir.write(&name, reread.to_json()?.as_bytes())?;
    }
    Ok(found)
}

/// Consume session `sid`'s compaction marker: of concurrent calls exactly one gets it.
pub fn take_marker(ctx: &Context, sid: &str) -> Result<Option<Reread>, RereadError> {
    let Some(name) = markers::marker_name(COMPACTION_PREFIX, sid) else {
        return Ok(None);
    };
    let Some(dir) = MarkerDir::existing(&ctx.env)? else {
        return Ok(None);
    };
    let Some(bytes) = dir.take(&name)? else {
        return Ok(None);
    };
    Ok(Reread::from_json(&bytes))
}

/// Remove session `sid`'s compaction marker, if any (its context window has ended, so no later
/// call may take it); true when one was removed.
pub fn drop_marker(ctx: &Context, sid: &str) -> Result<bool, RereadError> {
    let Some(name) = markers::marker_name(COMPACTION_PREFIX, sid) else {
        return Ok(false);
    };
    let Some(dir) = MarkerDir::existing(&ctx.env)? else {
        return Ok(false);
    };
    Ok(dir.remove(&name)?)
}

/// The files to re-read, in order.
pub fn targets(ctx: &Context, reread: &Reread) -> Vec<PathBuf> {
    match reread {
        Reread::Handler { dir: Some(dir) } => {
            let mut files = vec![dir.join(HANDLER_STATE)];
            files.extend(work_files::active_dispatches(ctx, dir));
            files
        }
        Reread::Handler { dir: None }
        | Reread::Loop {
            loop_file: None, ..
        } => Vec::new(),
        Reread::Worker { dispatch_file } => vec![dispatch_file.clone()],
        Reread::Loop {
            loop_file: Some(file),
            ..
        } => vec![file.clone()],
    }
}

#[cfg(test)]
mod tests;
