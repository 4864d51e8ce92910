//! A Claude Code transcript as the tree it is: entries linked by `uuid` / `parentUuid`, and the
//! active branch, what the model's context holds now.
//!
//! A rewind (the TUI's rewind, an edited message, `--resume-session-at`) leaves the abandoned
//! turns in the file and hangs the new turn off an earlier entry; a fork copies the rows into a
//! file of its own, keeping their `uuid`s. So the active branch is the chain back along
//! `parentUuid` from the newest message, together with the hook context that hangs off that
//! chain without leading anywhere: a tool call's `PreToolUse` context is a run of attachments
//! off the assistant message, beside its result, not on the chain. A compaction boundary has
//! no parent, so the chain ends at the newest one: one context window at a time.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::Value;

mod turn;
pub use turn::{Turn, latest_turn, newest_entry};

/// What one entry of the tree is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A user or assistant message.
    Message(Message),
    /// Context a hook added (`attachment.type: "hook_additional_context"`): its event, the tool
    /// call it came with, and the raw `additionalContext` strings.
    HookContext(HookContext),
    /// Any other attachment, a hook's raw answer (`hook_success`) among them.
    Attachment,
    /// A compaction boundary (`system`, `compact_boundary`): a new context window starts.
    Boundary,
    /// Any other entry with a `uuid` (system lines).
    Other,
}

/// A message entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: String,
    /// A line the client wrote itself (`isMeta`), such as a skill it expanded.
    pub meta: bool,
    /// The message's text blocks (a user message's string counts as one).
    pub texts: Vec<String>,
    /// The ids of its `tool_use` blocks.
    pub tool_uses: Vec<String>,
}

/// A hook's context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookContext {
    /// The event (`hookEvent`): `SessionStart`, `PreToolUse`, ...
    pub event: String,
    /// The tool call it came with (`toolUseID`), when it names one.
    pub tool_use_id: Option<String>,
    /// The `additionalContext` strings.
    pub texts: Vec<String>,
}

/// One entry of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its `uuid`.
    pub uuid: String,
    /// Its `parentUuid`, `None` at the root of a window.
    pub parent: Option<String>,
    /// What it is.
    pub kind: Kind,
}

impl Entry {
    fn is_attachment(&self) -> bool {
        matches!(self.kind, Kind::Attachment | Kind::HookContext(_))
    }
}

/// The tree of a transcript's main conversation (sub-agents' lines, `isSidechain`, left out),
/// in the order the client wrote its entries.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// The conversation (`sessionId` of its lines; a fork's are its own).
    pub session_id: Option<String>,
    /// The working directory the client ran in (`cwd`).
    pub cwd: Option<String>,
    /// The conversation a fork was made from: the `requestSessionId` of the rows it copied,
    /// when they name another than `session_id`.
    pub forked_from: Option<String>,
    /// The entries, in file order.
    pub entries: Vec<Entry>,
    /// Lines that were not JSON objects (a line cut by a crash, a foreign file).
    pub unreadable: usize,
}

impl Tree {
    /// The tree of a transcript's text. Lines without a `uuid` (the client's bookkeeping) are
    /// passed over.
    pub fn parse(text: &str) -> Self {
        let mut tree = Self::default();
        let mut requested: Option<String> = None;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(line) = serde_json::from_str::<Line>(line) else {
                tree.unreadable += 1;
                continue;
            };
            if line.is_sidechain {
                continue;
            }
            if tree.session_id.is_none() {
                tree.session_id.clone_from(&line.session_id);
            }
            if tree.cwd.is_none() {
                tree.cwd.clone_from(&line.cwd);
            }
            if requested.is_none() {
                requested.clone_from(&line.request_session_id);
            }
            let kind = line.kind();
            let Some(uuid) = line.uuid else {
                continue;
            };
            tree.entries.push(Entry {
                uuid,
                parent: line.parent_uuid,
                kind,
            });
        }
        tree.forked_from = requested.filter(|r| tree.session_id.as_ref() != Some(r));
        tree
    }

    /// Whether the text looked like a transcript at all: it has entries, and more lines read
    /// than not.
    pub fn is_transcript(&self) -> bool {
        !self.entries.is_empty() && self.session_id.is_some()
    }

    /// The entries of the active branch, in file order: the chain from the newest message (or
    /// other non-attachment entry) back to the root of its window, with the runs of
    /// attachments that hang off that chain and lead to no message.
    pub fn active(&self) -> Vec<&Entry> {
        let at: HashMap<&str, usize> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.uuid.as_str(), i))
            .collect();
        let parent_of = |i: usize| {
            self.entries[i]
                .parent
                .as_deref()
                .and_then(|p| at.get(p).copied())
        };
        let Some(leaf) = self.entries.iter().rposition(|e| !e.is_attachment()) else {
            return Vec::new();
        };
        let mut on_chain = HashSet::new();
        let mut next = Some(leaf);
        while let Some(i) = next {
            if !on_chain.insert(i) {
                break;
            }
            next = parent_of(i);
        }
        // Attachments some message hangs below: a run that leads on is part of the branch it
        // leads to, not context beside the chain.
        let mut leads_on = HashSet::new();
        for i in 0..self.entries.len() {
            if self.entries[i].is_attachment() {
                continue;
            }
            let mut up = parent_of(i);
            while let Some(p) = up {
                if !self.entries[p].is_attachment() || !leads_on.insert(p) {
                    break;
                }
                up = parent_of(p);
            }
        }
        let hangs_off_chain = |i: usize| {
            let mut seen = 0;
            let mut up = parent_of(i);
            while let Some(p) = up {
                if on_chain.contains(&p) {
                    return true;
                }
                seen += 1;
                if !self.entries[p].is_attachment() || seen > self.entries.len() {
                    return false;
                }
                up = parent_of(p);
            }
            false
        };
        (0..self.entries.len())
            .filter(|&i| {
                on_chain.contains(&i)
                    || (self.entries[i].is_attachment()
                        && !leads_on.contains(&i)
                        && hangs_off_chain(i))
            })
            .map(|i| &self.entries[i])
            .collect()
    }

    /// Every `tool_use` id of the active branch's messages.
    pub fn active_tool_uses(&self) -> HashSet<String> {
        self.active()
            .into_iter()
            .filter_map(|e| match &e.kind {
                Kind::Message(m) => Some(m.tool_uses.iter().cloned()),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

/// The lines of `bytes` with their offsets; the first one left out when `cut` (a tail read
/// starts within it).
fn lines_of(bytes: &[u8], cut: bool) -> Vec<(usize, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    for end in ends {
        if end > at && !(cut && at == 0) {
            out.push((at, &bytes[at..end]));
        }
        at = end + 1;
    }
    out
}

/// A line of the main conversation (not a sub-agent's), parsed.
fn main_line(line: &[u8]) -> Option<Line> {
    serde_json::from_slice::<Line>(line)
        .ok()
        .filter(|l| !l.is_sidechain)
}

/// A prompt: a user message the user wrote (not a tool's result, not the client's own line).
fn prompt_of(line: &[u8]) -> Option<Line> {
    // Only a user line is parsed.
    memchr::memmem::find(line, b"\"user\"")?;
    let line = main_line(line)?;
    let typed = line.kind.as_deref() == Some("user") && !line.is_meta;
    let written = match &line.message["content"] {
        Value::String(_) => true,
        Value::Array(blocks) => {
            blocks.iter().any(|b| b["type"] == "text")
                && !blocks.iter().any(|b| b["type"] == "tool_result")
        }
        _ => false,
    };
    (typed && written).then_some(line)
}

/// The fields of a transcript line the tree is made of (the client's own names, camel case).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<String>,
    uuid: Option<String>,
    parent_uuid: Option<String>,
    session_id: Option<String>,
    request_session_id: Option<String>,
    prompt_id: Option<String>,
    cwd: Option<String>,
    #[serde(default)]
    is_sidechain: bool,
    #[serde(default)]
    is_meta: bool,
    #[serde(default)]
    message: Value,
    #[serde(default)]
    attachment: Value,
}

impl Line {
    fn kind(&self) -> Kind {
        match self.kind.as_deref() {
            Some(role @ ("user" | "assistant")) => Kind::Message(self.message_of(role)),
            Some("attachment") => {
                let attachment = &self.attachment;
                if attachment["type"] != "hook_additional_context" {
                    return Kind::Attachment;
                }
                let texts = match &attachment["content"] {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(items) => items
                        .iter()
                        .filter_map(|i| i.as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                };
                Kind::HookContext(HookContext {
                    event: attachment["hookEvent"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    tool_use_id: attachment["toolUseID"].as_str().map(str::to_owned),
                    texts,
                })
            }
            Some("system") if self.subtype.as_deref() == Some("compact_boundary") => Kind::Boundary,
            _ => Kind::Other,
        }
    }

    fn message_of(&self, role: &str) -> Message {
        let mut message = Message {
            role: role.to_owned(),
            meta: self.is_meta,
            ..Message::default()
        };
        match &self.message["content"] {
            Value::String(text) => message.texts.push(text.clone()),
            Value::Array(blocks) => {
                for block in blocks {
                    match block["type"].as_str() {
                        Some("text") => {
                            if let Some(text) = block["text"].as_str() {
                                message.texts.push(text.to_owned());
                            }
                        }
                        Some("tool_use") => {
                            if let Some(id) = block["id"].as_str() {
                                message.tool_uses.push(id.to_owned());
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        message
    }
}

#[cfg(test)]
mod tests;
