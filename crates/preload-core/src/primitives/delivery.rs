//! What goes out: `[Preloaded: …]` blocks with real newlines, the character budget that keeps
//! every output under Claude Code's 10,000-character cap (with carry-over and labelled parts),
//! and the delivery event log.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::json;

use crate::primitives::clock;

mod header;
mod parts;
pub use header::{Cut, Header, cut_files, parse_header, renewed_paths};
pub use parts::labelled_parts;
#[cfg(test)]
use parts::split_at_lines;

/// Default character budget of one `additionalContext` or reason.
pub const DEFAULT_BUDGET: usize = 9_500;
/// The smallest budget honoured; a smaller setting is raised to this.
pub const MIN_BUDGET: usize = 200;

/// Character count (what Claude Code's cap counts).
pub fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Trim trailing newlines (and carriage returns) as shell command substitution does.
pub fn trim_trailing_newlines(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r'])
}

/// Cut `text` to at most `limit` characters, marking a cut with `…` (within the limit).
pub fn shorten(text: &str, limit: usize) -> String {
    if chars(text) <= limit {
        return text.to_owned();
    }
    if limit == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(limit - 1).collect();
    out.push('…');
    out
}

/// How a delivered file's header line begins.
pub const BLOCK_HEADER: &str = "[Preloaded: ";

/// One delivered file: header, newline, content without trailing newlines, newline.
pub fn block(path: &str, content: &str) -> String {
    assemble(&[
        BLOCK_HEADER,
        path,
        "]\n",
        trim_trailing_newlines(content),
        "\n",
    ])
}

/// `pieces` joined, in a string allocated once at its length (`format!` grows its string as it
/// writes, copying a file's text several times).
pub fn assemble(pieces: &[&str]) -> String {
    let mut out = String::with_capacity(pieces.iter().map(|p| p.len()).sum());
    for piece in pieces {
        out.push_str(piece);
    }
    out
}

/// Notes a block header may carry after the path, in parentheses: a file sent again because it
/// changed on disk since it was delivered.
pub const LABEL_UPDATED: &str = "updated";
/// The start of the note of a growing log sent as its last lines (`last 100 of 532 lines`).
pub const LABEL_TAIL: &str = "last ";

/// A block's header path with its note: `<path> (<label>)`, or the path alone.
pub fn labelled(path: &str, labels: &[String]) -> String {
    if labels.is_empty() {
        path.to_owned()
    } else {
        format!("{path} ({})", labels.join(", "))
    }
}

/// The path of a header's inside (`<path>[ (<label>)][ (part i/n)]`).
pub fn header_path(inner: &str) -> &str {
    let path = inner.split(" (part ").next().unwrap_or(inner);
    match path.rsplit_once(" (") {
        Some((head, note))
            if note.ends_with(')')
                && (note.starts_with(LABEL_UPDATED) || note.starts_with(LABEL_TAIL)) =>
        {
            head
        }
        _ => path,
    }
}

/// The insides of the `[Preloaded: …]` header lines of a text (`<path>[ (<note>)][ (part i/n)]`),
/// in order.
pub fn headers(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        line.strip_prefix(BLOCK_HEADER)
            .and_then(|l| l.strip_suffix(']'))
    })
}

/// The paths named by the `[Preloaded: <path>]` headers of a text (with a note or a part
/// label, `[Preloaded: <path> (updated)]`, `[Preloaded: <path> (part i/n)]`), in order, each
/// once.
pub fn block_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for inner in headers(text) {
        let path = header_path(inner);
        if !out.iter().any(|p| p == path) {
            out.push(path.to_owned());
        }
    }
    out
}

/// Join blocks so that one blank line separates them.
pub fn join_blocks<S: AsRef<str>>(blocks: &[S]) -> String {
    let mut out = String::new();
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(b.as_ref());
    }
    out
}

/// Room kept beside one part of a split file in an output: the banner, a heartbeat line or a
/// rule's text still fit next to it.
pub const PART_HEADROOM: usize = 1_000;

/// The size of the parts a file is cut into for outputs of `budget` characters: always the
/// same for the same budget (part progress is counted in parts), with [`PART_HEADROOM`] left.
pub fn part_size(budget: usize) -> usize {
    budget.saturating_sub(PART_HEADROOM).max(MIN_BUDGET)
}

/// Cut `content` into the blocks that deliver it within `limit` characters each.
///
/// One block when it fits; otherwise parts labelled `[Preloaded: <path> (part i/n)]`, cut at a
/// line end where one falls in the last fifth of a part. Deterministic for the same path and
/// content, whatever the labels (`path` may carry them).
pub fn file_parts(path: &str, content: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(MIN_BUDGET);
    // The cut depends on the file's path and content, not on its labels (`updated`, which one
    // window says and the next may not): they take room kept for them, so the parts a window
    // holds and the ones cut for it later are the same.
    let labels = chars(path) - chars(header_path(path));
    let room = limit.saturating_sub(LABEL_ROOM.saturating_sub(labels));
    let whole = block(path, content);
    if chars(&whole) <= room {
        return vec![whole];
    }
    labelled_parts(content, room, |i, n| {
        format!("[Preloaded: {path} (part {i}/{n})]")
    })
}

/// Characters a file's header keeps for its labels, whatever they are.
const LABEL_ROOM: usize = 40;

/// Packs blocks into one output string within a character budget, or into several outputs
/// ("slots", one per `SessionStart` registration) each within its own budget.
///
/// Blocks keep their order: a block that does not fit the current slot opens the next one.
#[derive(Debug, Clone)]
pub struct Packer {
    budget: usize,
    used: usize,
    blocks: Vec<String>,
    /// Budgets of the slots not opened yet, next first.
    later: Vec<usize>,
    /// Slots already closed, in order.
    closed: Vec<Vec<String>>,
}

impl Packer {
    /// An empty packer with `budget` characters.
    pub fn new(budget: usize) -> Self {
        Self::slots(&[budget])
    }

    /// An empty packer with one slot per entry of `budgets` (at least one slot).
    pub fn slots(budgets: &[usize]) -> Self {
        let mut budgets: Vec<usize> = budgets.iter().map(|b| (*b).max(MIN_BUDGET)).collect();
        if budgets.is_empty() {
            budgets.push(DEFAULT_BUDGET);
        }
        let first = budgets.remove(0);
        budgets.reverse();
        Self {
            budget: first,
            used: 0,
            blocks: Vec::new(),
            later: budgets,
            closed: Vec::new(),
        }
    }

    /// The budget of the current slot.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Characters left for one more block in the current slot (its separator accounted for).
    pub fn room(&self) -> usize {
        let sep = usize::from(!self.blocks.is_empty());
        self.budget.saturating_sub(self.used + sep)
    }

    /// Add `text` when it fits (in the current slot, else in the next one); true when added.
    pub fn try_add(&mut self, text: impl Into<String>) -> bool {
        let text = text.into();
        let len = chars(&text);
        if len > self.room() {
            let fits_next = self.later.last().is_some_and(|next| len <= *next);
            if self.blocks.is_empty() || !fits_next {
                return false;
            }
            self.closed.push(std::mem::take(&mut self.blocks));
            self.budget = self.later.pop().unwrap_or(self.budget);
            self.used = 0;
        }
        self.used += len + usize::from(!self.blocks.is_empty());
        self.blocks.push(text);
        true
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.closed.is_empty()
    }

    /// The joined text of every slot.
    pub fn finish(&self) -> String {
        let all: Vec<&String> = self.closed.iter().flatten().chain(&self.blocks).collect();
        join_blocks(&all)
    }

    /// The blocks of each slot, one entry per slot (unused slots are empty).
    pub fn into_slot_blocks(self) -> Vec<Vec<String>> {
        let mut out = self.closed;
        out.push(self.blocks);
        out.extend(self.later.iter().map(|_| Vec::new()));
        out
    }
}

/// Events of the delivery log (CONTRACT section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `SessionStart` seeded a file as already in context.
    Seed,
    /// Delivered directly in this hook's output.
    DirectDeliver,
    /// Claimed from the queue and delivered (or stashed for `PostToolUse`).
    ClaimDeliver,
    /// Added to `pendingPreloads`.
    QueuePending,
    /// Content handed to `pendingAllowInjections`.
    StashInject,
    /// Found as a § reference of a delivered file.
    ResolveRef,
    /// Skipped: already in context by path.
    SkipDedup,
    /// Skipped: already in context by inode.
    SkipInode,
    /// A local CMD file shadows a preloaded global one.
    OverrideDetect,
    /// An output would have exceeded its budget: a file went out in parts (`dedupResult`
    /// `split <first>-<last>/<parts>`), or did not fit and waits for the next call
    /// (`carried-over`), or a whole output was over it (`output <chars>/<budget>`).
    OverBudget,
    /// The client's transcript (`file`) could not be read: what a rewind took out of the
    /// context is not followed in this call.
    NoTranscript,
}

impl Event {
    /// The log's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Seed => "seed",
            Self::DirectDeliver => "direct-deliver",
            Self::ClaimDeliver => "claim-deliver",
            Self::QueuePending => "queue-pending",
            Self::StashInject => "stash-inject",
            Self::ResolveRef => "resolve-ref",
            Self::SkipDedup => "skip-dedup",
            Self::SkipInode => "skip-inode",
            Self::OverrideDetect => "override-detect",
            Self::OverBudget => "over-budget",
            Self::NoTranscript => "no-transcript",
        }
    }
}

/// The delivery event log: JSON lines appended with a single write each.
#[derive(Debug, Clone)]
pub struct EventLog {
    path: Option<PathBuf>,
    hook: String,
    tool_call: i64,
}

impl EventLog {
    /// A log for `hook` (binary name without `preload-`), writing to `path` when set.
    pub fn new(path: Option<PathBuf>, hook: &str, tool_call: i64) -> Self {
        Self {
            path,
            hook: hook.to_owned(),
            tool_call,
        }
    }

    /// A log that records nothing.
    pub fn disabled() -> Self {
        Self::new(None, "", 0)
    }

    /// True when events are written.
    pub fn enabled(&self) -> bool {
        self.path.is_some()
    }

    /// Append one event. Failures are ignored: the log never breaks a hook.
    pub fn record(
        &self,
        event: Event,
        file: &str,
        source: &str,
        session_exists: bool,
        dedup: &str,
    ) {
        let Some(path) = &self.path else { return };
        let line = json!({
            "ts": clock::iso_utc(SystemTime::now()),
            "hook": self.hook,
            "event": event.as_str(),
            "file": file,
            "source": source,
            "toolCall": self.tool_call,
            "sessionExists": session_exists,
            "dedupResult": dedup,
        });
        let mut text = line.to_string();
        text.push('\n');
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(text.as_bytes());
        }
    }
}

/// The `dedupResult` of an [`Event::OverBudget`] for a file sent in parts: parts `first` to
/// `last` (counted from 1) of `total` went out in this output.
pub fn split_note(first: usize, last: usize, total: usize) -> String {
    format!("split {first}-{last}/{total}")
}

/// The `dedupResult` of an [`Event::OverBudget`] for a file none of which fit this output.
pub const CARRIED_OVER: &str = "carried-over";

/// The `dedupResult` of an [`Event::OverBudget`] for a whole output of `chars` characters over
/// its `budget`.
pub fn output_note(chars: usize, budget: usize) -> String {
    format!("output {chars}/{budget}")
}

/// The delivery log's `source` of an event made for a sub-agent's context window.
pub fn sub_agent_source(source: &str, agent: &str) -> String {
    format!("{source} [sub-agent {agent}]")
}

/// The sub-agent whose context window a logged `source` speaks for, if any.
pub fn sub_agent_of_source(source: &str) -> Option<&str> {
    source
        .strip_suffix(']')?
        .rsplit_once(" [sub-agent ")
        .map(|(_, agent)| agent)
}

/// What reading a file for delivery gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileBody {
    /// The text (lossy UTF-8).
    Text(String),
    /// Larger than the cap: deliver a pointer instead of the content.
    TooLarge(u64),
    /// Missing, not a regular file, unreadable.
    Unavailable,
    /// Zero bytes (or only whitespace).
    Empty,
}

/// Read a regular file for delivery, at most `max_bytes` (never blocks on a FIFO or device).
pub fn read_for_delivery(path: &std::path::Path, max_bytes: u64) -> FileBody {
    read_for_delivery_meta(path, max_bytes).0
}

/// [`read_for_delivery`], with the metadata of the file as it was opened for the read (`None`
/// when it could not be opened).
pub fn read_for_delivery_meta(
    path: &std::path::Path,
    max_bytes: u64,
) -> (FileBody, Option<std::fs::Metadata>) {
    let (meta, bytes) = crate::primitives::file::read_regular_with(path, max_bytes);
    let body = match bytes {
        Ok(bytes) => {
            let text = crate::primitives::file::lossy_text(bytes);
            if text.trim().is_empty() {
                FileBody::Empty
            } else {
                FileBody::Text(text)
            }
        }
        Err(crate::primitives::file::ReadError::TooLarge { size, .. }) => FileBody::TooLarge(size),
        Err(crate::primitives::file::ReadError::Unavailable { .. }) => FileBody::Unavailable,
    };
    (body, meta)
}

/// The block that stands for a file too large to deliver by content.
pub fn pointer_block(path: &str, size: u64, max_bytes: u64) -> String {
    block(
        path,
        &format!(
            "(not inlined: {size} bytes, more than the {max_bytes}-byte preload limit; Read this file when you need it)"
        ),
    )
}

#[cfg(test)]
mod tests;
