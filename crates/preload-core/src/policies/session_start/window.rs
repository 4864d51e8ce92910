//! Which context window a SessionStart fills: the owner's session, a resumed or forked
//! conversation's, or a new one.

use std::path::{Path, PathBuf};

use crate::mechanisms::context::Context;
use crate::mechanisms::ledger;
use crate::mechanisms::session::{self, STATE_FILE};
use crate::state::State;

/// Which context window a SessionStart fills.
pub(super) struct Window {
    /// The session to re-seed (the owner's, or a resumed conversation's).
    pub(super) session_dir: Option<PathBuf>,
    /// True when the window goes on (a resumed conversation) instead of starting over.
    pub(super) goes_on: bool,
    /// The record a resumed (or forked) conversation goes on from when no session holds its
    /// window: its seed, or the ended record its window left; with `session_dir`, the record
    /// whose lists replace the session's.
    pub(super) resumed_seed: Option<(PathBuf, State)>,
}

/// Whether a start's client holds the history of a conversation with what the hooks added to
/// it: a `resume` replays it, a `fork` copies it.
pub(super) fn goes_on_from_history(source: &str) -> bool {
    matches!(source, "resume" | "fork")
}

/// On `resume` the client replays the conversation: what its state recorded as in context is in
/// the transcript again, so that context window goes on instead of starting over. A session the
/// conversation's dead process left is this process's now. When the owner has a session, that
/// session goes on when it served the conversation; when it serves another now (a fork or a
/// `/clear` under one supervisor PID), it goes on from the record the conversation's window left.
///
/// A fork (`parent`: the conversation it was made from) starts as its parent's window at the fork
/// point, under its own conversation: it goes on from the parent's state the way a resume of the
/// parent would, and the session's fill keeps the parent's window there as the parent's record.
pub(super) fn choose_window(
    ctx: &Context,
    source: &str,
    conversation: &str,
    parent: Option<&str>,
) -> Window {
    let history = match parent {
        Some(parent) => Some(parent),
        None if source == "resume" => Some(conversation),
        None => None,
    };
    if let Some(dir) = session::find_session(ctx).filter(|d| d.join(STATE_FILE).is_file()) {
        let serves = history.is_some_and(|c| session::serves_conversation(ctx, &dir, c));
        // The owner's session serves another conversation now (a fork or a `/clear` under one
        // supervisor PID): the one resumed goes on there from the record its window left.
        let record = history
            .filter(|_| !serves)
            .and_then(|c| session::find_conversation(ctx, c))
            .filter(|r| !r.is_session)
            .and_then(|r| ledger::read_seed(&r.path).ok().map(|seed| (r.path, seed)));
        return Window {
            goes_on: serves || record.is_some(),
            session_dir: Some(dir),
            resumed_seed: record,
        };
    }
    let resumed = history.and_then(|c| session::find_conversation(ctx, c));
    if let Some(window) = parent
        .filter(|_| resumed.is_none())
        .and_then(|p| fork_of_held(ctx, p))
    {
        return window;
    }
    // A fork leaves its parent's record as it was. The one exception is a parent's seed that
    // the fork's own seed replaces (one owner PID for both): its window is kept as the parent's
    // ended record first.
    if let (Some(r), Some(sessions)) = (resumed.as_ref(), ctx.sessions_dir()) {
        let replaced = parent.is_some()
            && !r.is_session
            && r.path == session::seed_path(&sessions, ctx.owner_pid);
        if let Some(old) = replaced.then(|| ledger::read_seed(&r.path).ok()).flatten() {
            ledger::keep_window(&sessions, &old, conversation);
        }
    }
    match resumed {
        Some(r) if r.is_session => Window {
            session_dir: r.path.parent().map(Path::to_path_buf),
            goes_on: true,
            resumed_seed: None,
        },
        resumed => Window {
            session_dir: None,
            goes_on: false,
            resumed_seed: resumed
                .and_then(|r| ledger::read_seed(&r.path).ok().map(|seed| (r.path, seed))),
        },
    }
}

/// A fork of conversation `parent` whose record another live client holds (its session, or
/// its seed): the fork starts, in a seed of its own, as that window at the fork point (its
/// fields, not the session's), and the parent's record is left as it is. `None` when no
/// record names the conversation.
fn fork_of_held(ctx: &Context, parent: &str) -> Option<Window> {
    let held = session::conversation_record(ctx, parent)?;
    let record = if held.is_session {
        crate::state::load(&held.path).ok()?
    } else {
        ledger::read_seed(&held.path).ok()?
    };
    Some(Window {
        session_dir: None,
        goes_on: false,
        resumed_seed: Some((held.path, fork_seed(ctx, &record, parent))),
    })
}

/// A fork of conversation `parent` whose session `dir` could not be written in time (its lock
/// held, the call's budget spent): it goes on from the parent's window, as read, in a seed of
/// its own (as a fork of a conversation another client holds does), and the session is left as
/// it is. The session's state file and the fork's seed; `None` when the state cannot be read.
pub(super) fn fork_of_unwritten(
    ctx: &Context,
    parent: &str,
    dir: &Path,
) -> Option<(PathBuf, State)> {
    let path = dir.join(STATE_FILE);
    let record = crate::state::load(&path).ok()?;
    let seed = fork_seed(ctx, &record, parent);
    Some((path, seed))
}

/// The seed of this process's fork of conversation `parent`, whose window `record` holds: the
/// fork's own, as that window at the fork point.
fn fork_seed(ctx: &Context, record: &State, parent: &str) -> State {
    let mut seed = session::new_seed(ctx.owner_pid, &[]);
    ledger::restore_window(&mut seed, record);
    seed.set_text(crate::state::fields::FORK_OF, parent);
    seed
}
