//! The § reference scanner and the walk-up resolver.
//!
//! A reference is `§CMD_NAME`, `§FMT_NAME` or `§INV_NAME` outside fenced blocks and inline
//! backtick spans (those are inert). A lowercase suffix (`§CMD_GENERATE_DEBRIEF_file`) is dropped
//! with its underscore. Names are `[A-Z0-9_]` only, so a reference can never name a path.

use std::path::{Path, PathBuf};

use crate::primitives::paths::PhysicalDirs;

/// The three kinds of reference and their folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `§CMD_` → `commands/`.
    Cmd,
    /// `§FMT_` → `formats/`.
    Fmt,
    /// `§INV_` → `invariants/`.
    Inv,
}

impl Kind {
    /// The sigil prefix without `§`.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Cmd => "CMD_",
            Self::Fmt => "FMT_",
            Self::Inv => "INV_",
        }
    }

    /// The folder under `.directives/`.
    pub fn folder(self) -> &'static str {
        match self {
            Self::Cmd => "commands",
            Self::Fmt => "formats",
            Self::Inv => "invariants",
        }
    }
}

/// One reference: its kind and its name without the prefix (`ASK_ROUND`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    /// The kind.
    pub kind: Kind,
    /// The upper-case name.
    pub name: String,
}

impl Reference {
    /// The file name it resolves to: `CMD_ASK_ROUND.md`.
    pub fn file_name(&self) -> String {
        format!("{}{}.md", self.kind.prefix(), self.name)
    }
}

/// Remove inline backtick spans (paired backticks) from a line; a line without a backtick is
/// kept as it is.
fn strip_backticks(line: &str) -> std::borrow::Cow<'_, str> {
    let backtick = |text: &str| crate::primitives::bytes::find(b'`', text.as_bytes());
    if backtick(line).is_none() {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = backtick(rest) {
        let after = &rest[open + 1..];
        match backtick(after) {
            Some(close) => {
                out.push_str(&rest[..open]);
                rest = &after[close + 1..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Extract the references of one already-stripped line, in order.
fn scan_line(line: &str, out: &mut Vec<Reference>) {
    for at in sigils(line) {
        let tail = &line[at + '§'.len_utf8()..];
        let Some(kind) = [Kind::Cmd, Kind::Fmt, Kind::Inv]
            .into_iter()
            .find(|k| tail.starts_with(k.prefix()))
        else {
            continue;
        };
        let body = &tail[kind.prefix().len()..];
        if !body.starts_with(|c: char| c.is_ascii_uppercase()) {
            continue;
        }
        let end = body
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(body.len());
        let name = body[..end].trim_end_matches('_');
        if name.is_empty() {
            continue;
        }
        // A name seen before (most, in a long skill) is not copied again.
        if out.iter().any(|r| r.kind == kind && r.name == name) {
            continue;
        }
        out.push(Reference {
            kind,
            name: name.to_owned(),
        });
    }
}

/// All references of a text, in order of first appearance, without duplicates.
///
/// A reference counts on a line outside fenced blocks (a line whose text starts with three
/// backticks opens or closes one, and counts nothing itself). Only the lines that hold a `§` or
/// start a fence are looked at: the text is searched for the next of either, not walked line by
/// line. The searches are vectorised byte searches ([`crate::primitives::bytes`]): a start scans the standards, a
/// few hundred kilobytes, on every new context window.
pub fn scan(text: &str) -> Vec<Reference> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut at = 0;
    // The next `§` at or after `at`, found once and kept until it is passed.
    let mut sigil = find_sigil(text);
    loop {
        if sigil.is_some_and(|s| s < at) {
            sigil = find_sigil(&text[at..]).map(|i| at + i);
        }
        // Backticks are looked for only up to the next `§`.
        let fence = find_fence(&text[at..sigil.unwrap_or(text.len())]).map(|i| at + i);
        let Some(hit) = fence.or(sigil) else {
            break;
        };
        let start = crate::primitives::bytes::rfind(b'\n', &bytes[..hit]).map_or(0, |i| i + 1);
        let end =
            crate::primitives::bytes::find(b'\n', &bytes[hit..]).map_or(text.len(), |i| hit + i);
        at = end;
        let line = &text[start..end];
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && (fence.is_none() || find_sigil(line).is_some()) {
            scan_line(&strip_backticks(line), &mut out);
        }
    }
    out
}

/// Where each `§` starts in `text`: its second byte (`0xA7`) searched for, its first (`0xC2`)
/// checked (in UTF-8 that pair is the `§` and nothing else). The searches are the vectorised
/// byte search; the standard library's `str` searches for a character are not.
fn sigils(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    crate::primitives::bytes::find_iter(0xA7, bytes)
        .filter(|&i| i > 0 && bytes[i - 1] == 0xC2)
        .map(|i| i - 1)
}

/// Where the first `§` starts in `text`.
fn find_sigil(text: &str) -> Option<usize> {
    sigils(text).next()
}

/// Where three backticks start in `text`: found by looking for one (a byte search much
/// faster than a substring search).
pub(crate) fn find_fence(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    crate::primitives::bytes::find_iter(b'`', bytes).find(|&at| bytes[at..].starts_with(b"```"))
}

/// Where references resolve.
#[derive(Debug, Clone)]
pub struct Resolver {
    /// The project root (walk-up cap for project files).
    pub project_root: Option<PathBuf>,
    /// `~/.claude` (walk-up cap for engine files).
    pub claude_dir: PathBuf,
    /// `~/.claude/engine/.directives`, the fallback.
    pub engine_directives: PathBuf,
    /// The call's look at the disk: each candidate is probed once however many files name it.
    pub seen: PhysicalDirs,
}

impl Resolver {
    /// The directory the walk-up stops at for a file in `dir`.
    fn cap_for(&self, dir: &Path) -> Option<&Path> {
        if let Some(root) = self.project_root.as_deref().filter(|r| dir.starts_with(r)) {
            return Some(root);
        }
        dir.starts_with(&self.claude_dir)
            .then_some(self.claude_dir.as_path())
    }

    /// The file a reference made from a file in `dir` names: the nearest
    /// `.directives/<folder>/<file>` walking up to the cap, else the engine's.
    pub fn resolve(&self, reference: &Reference, dir: &Path) -> Option<PathBuf> {
        let file = reference.file_name();
        let folder = reference.kind.folder();
        let cap = self.cap_for(dir);
        let mut current = Some(dir);
        while let Some(d) = current {
            let candidate = d.join(".directives").join(folder).join(&file);
            if self.seen.probe_file(&candidate) {
                return Some(candidate);
            }
            if cap.is_none_or(|c| d == c) {
                break;
            }
            current = d.parent();
        }
        let fallback = self.engine_directives.join(folder).join(&file);
        self.seen.probe_file(&fallback).then_some(fallback)
    }

    /// The resolved references of `content` (the file at `path`), SKILL.md's CMD references
    /// excluded (phase commands load lazily). Unresolvable references are skipped.
    pub fn references_of(&self, path: &Path, content: &str) -> Vec<PathBuf> {
        let is_skill = path.file_name().is_some_and(|n| n == "SKILL.md");
        let dir = path.parent().unwrap_or(Path::new("/"));
        let mut out: Vec<PathBuf> = Vec::new();
        for reference in scan(content) {
            if is_skill && reference.kind == Kind::Cmd {
                continue;
            }
            if let Some(found) = self.resolve(&reference, dir) {
                if !out.contains(&found) {
                    out.push(found);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
