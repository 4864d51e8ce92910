//! What the model received, read back from the client's own transcript: every `[Preloaded: …]`
//! block on the active branch of the current context window, counted per file and per part,
//! beside the files a session's record says are in that window.
//!
//! How a transcript is counted:
//! - Claude Code: the `hook_additional_context` attachments of the active branch (the
//!   `hook_success` beside each repeats the hook's answer and is not counted again), and the
//!   skills the client expanded itself (`Base directory for this skill: DIR`), which count as
//!   an arrival of `DIR/SKILL.md` but are not blocks of ours. Codex: the developer messages.
//! - Only the newest context window: counts start again at each compaction.
//! - A file cut in parts counts once per part; its count is the most times any one part
//!   arrived, a whole arrival holding every part. A file sent again because it changed (`(updated)`, a log's `(last …)`) starts a
//!   new count, so its one re-delivery is no duplicate.
//! - Paths are compared normalised (`paths::normalize`): one file reached under two spellings
//!   is one file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::primitives::delivery;
use crate::primitives::paths;
use crate::primitives::transcript::branch::{Kind, Tree};
use crate::primitives::transcript::rollout::Rollout;

/// The line a skill the client expanded itself begins with.
const SKILL_BASE: &str = "Base directory for this skill: ";

/// Which client wrote a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// A Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout.
    Codex,
}

impl Client {
    /// Its name, as the receipt prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }
}

/// One file the active branch shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// Its path, normalised.
    pub path: String,
    /// The most times any one part (or the whole file) arrived in one text of it.
    pub count: usize,
    /// How many parts its cut has (1 for a whole file).
    pub parts: usize,
    /// How many times it came again as a new text (`(updated)`, a log's last lines).
    pub renewed: usize,
    /// How many of its arrivals were the client's own skill expansion.
    pub expanded: usize,
}

/// What the model received on a transcript's active branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// Who wrote the transcript.
    pub client: Client,
    /// The conversation.
    pub conversation: Option<String>,
    /// The directory the client ran in.
    pub cwd: Option<String>,
    /// The conversation a fork was made from.
    pub forked_from: Option<String>,
    /// The hook texts counted.
    pub contexts: usize,
    /// Every file, in the order it first arrived.
    pub files: Vec<Arrival>,
}

/// Why a file is no transcript.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    /// It could not be read.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// What the system said.
        reason: String,
    },
    /// Neither client wrote it.
    #[error("{0} is not a Claude Code transcript or a Codex rollout")]
    NotATranscript(String),
}

/// Counts by file, then by text (a new text after each renewal), then by part.
#[derive(Default)]
struct Counter {
    order: Vec<String>,
    counts: BTreeMap<String, FileCounts>,
}

/// The arrivals of one text of a file: whole, and per part.
#[derive(Default)]
struct TextCounts {
    whole: usize,
    parts: BTreeMap<usize, usize>,
}

impl TextCounts {
    /// The most times any one part arrived: a whole arrival holds every part.
    fn count(&self) -> usize {
        self.whole + self.parts.values().copied().max().unwrap_or(0)
    }
}

#[derive(Default)]
struct FileCounts {
    texts: Vec<TextCounts>,
    parts: usize,
    renewed: usize,
    expanded: usize,
}

impl Counter {
    fn entry(&mut self, path: String) -> &mut FileCounts {
        if !self.counts.contains_key(&path) {
            self.order.push(path.clone());
        }
        self.counts.entry(path).or_default()
    }

    fn block(&mut self, home: &Path, inner: &str) {
        let header = delivery::parse_header(inner);
        let file = self.entry(paths::normalize(header.path, home));
        // A new text of the file starts with its first part.
        let first = header.part.is_none_or(|(i, _)| i == 1);
        if file.texts.is_empty() || (header.renewed && first) {
            if !file.texts.is_empty() {
                file.renewed += 1;
            }
            file.texts.push(TextCounts::default());
        }
        file.parts = file.parts.max(header.part.map_or(1, |(_, n)| n));
        if let Some(text) = file.texts.last_mut() {
            match header.part {
                Some((i, _)) => *text.parts.entry(i).or_default() += 1,
                None => text.whole += 1,
            }
        }
    }

    fn expansion(&mut self, path: String) {
        let file = self.entry(path);
        if file.texts.is_empty() {
            file.texts.push(TextCounts::default());
        }
        file.expanded += 1;
        file.parts = file.parts.max(1);
        if let Some(text) = file.texts.last_mut() {
            text.whole += 1;
        }
    }

    fn into_arrivals(self) -> Vec<Arrival> {
        let mut counts = self.counts;
        self.order
            .into_iter()
            .filter_map(|path| {
                let c = counts.remove(&path)?;
                let count = c.texts.iter().map(TextCounts::count).max().unwrap_or(0);
                Some(Arrival {
                    path,
                    count,
                    parts: c.parts,
                    renewed: c.renewed,
                    expanded: c.expanded,
                })
            })
            .collect()
    }
}

impl Receipt {
    /// The receipt of the transcript at `path` (`~` and symlinked directories in the paths it
    /// names resolved against `home`).
    pub fn of_file(path: &Path, home: &Path) -> Result<Self, ReceiptError> {
        let text = std::fs::read(path).map_err(|e| ReceiptError::Unreadable {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let text = String::from_utf8_lossy(&text);
        let rollout = Rollout::read(path, &text);
        Self::of(&text, rollout, home)
            .ok_or_else(|| ReceiptError::NotATranscript(path.display().to_string()))
    }

    /// The receipt of a transcript's text; `None` when it is neither client's. A Codex fork's
    /// history by reference is read by [`Receipt::of_file`] only.
    pub fn of_text(text: &str, home: &Path) -> Option<Self> {
        Self::of(text, Rollout::parse(text), home)
    }

    fn of(text: &str, rollout: Option<Rollout>, home: &Path) -> Option<Self> {
        if let Some(rollout) = rollout {
            let mut counter = Counter::default();
            for context in &rollout.developer_texts {
                for inner in delivery::headers(context) {
                    counter.block(home, inner);
                }
            }
            return Some(Self {
                client: Client::Codex,
                conversation: rollout.session_id,
                cwd: rollout.cwd,
                forked_from: rollout.forked_from.map(|(id, _)| id),
                contexts: rollout.developer_texts.len(),
                files: counter.into_arrivals(),
            });
        }
        let tree = Tree::parse(text);
        if !tree.is_transcript() {
            return None;
        }
        let mut counter = Counter::default();
        let mut contexts = 0;
        for entry in tree.active() {
            match &entry.kind {
                Kind::HookContext(context) => {
                    for text in &context.texts {
                        contexts += 1;
                        for inner in delivery::headers(text) {
                            counter.block(home, inner);
                        }
                    }
                }
                Kind::Message(message) if message.role == "user" && message.meta => {
                    for text in &message.texts {
                        if let Some(dir) = text.strip_prefix(SKILL_BASE) {
                            let dir = dir.lines().next().unwrap_or_default().trim();
                            let skill = Path::new(dir).join("SKILL.md");
                            counter.expansion(paths::normalize(&skill.to_string_lossy(), home));
                        }
                    }
                }
                _ => {}
            }
        }
        Some(Self {
            client: Client::ClaudeCode,
            conversation: tree.session_id,
            cwd: tree.cwd,
            forked_from: tree.forked_from,
            contexts,
            files: counter.into_arrivals(),
        })
    }

    /// The files that arrived more than once.
    pub fn duplicates(&self) -> Vec<&Arrival> {
        self.files.iter().filter(|f| f.count > 1).collect()
    }

    /// The files of `record` (a window's `preloadedFiles`) the branch never shows, normalised.
    pub fn missing<'a>(
        &self,
        record: impl IntoIterator<Item = &'a str>,
        home: &Path,
    ) -> Vec<String> {
        let shown: BTreeSet<&str> = self.files.iter().map(|f| f.path.as_str()).collect();
        let mut out: Vec<String> = Vec::new();
        for path in record {
            let path = paths::normalize(path, home);
            if !shown.contains(path.as_str()) && !out.contains(&path) {
                out.push(path);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
