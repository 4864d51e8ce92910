//! A pack as the text the model receives: a header with the read order, verbatim files, then
//! indexes, then one-line mentions, and a footer with the file count and estimated tokens;
//! over its budget, the lowest-priority files are reduced (verbatim, index, mention) first.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{Loaded, LoadedPack, Strategy};
use crate::primitives::delivery::{self, FileBody};
use crate::state::stamps::Meta;

/// The rule under the header and above the footer.
fn rule() -> String {
    "=".repeat(80)
}

/// A file of a pack that was sent in a cheaper form than configured, to stay in budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reduction {
    /// The path as configured.
    pub path: String,
    /// The form it was sent in.
    pub to: Strategy,
}

/// A rendered pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The text.
    pub text: String,
    /// Files whose content (or index) is in the text.
    pub files_loaded: usize,
    /// Estimated tokens of the text above the footer (characters / 4, rounded up).
    pub tokens: usize,
    /// Files reduced to stay within the budget.
    pub reductions: Vec<Reduction>,
    /// Every file the text was made from (the configuration file first), each with its
    /// metadata from when it was read (`None`: it was not there).
    pub sources: Vec<(PathBuf, Option<Meta>)>,
}

/// One file of the pack with its effective strategy.
#[derive(Debug, Clone)]
struct Entry {
    shown: String,
    absolute: PathBuf,
    strategy: Strategy,
    priority: i64,
    note: Option<String>,
    content: FileBody,
}

/// Estimated tokens of `text`: characters / 4, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    delivery::chars(text).div_ceil(4)
}

/// The text between the first `start` marker and the next `end` marker, trimmed; `None` when
/// either is missing.
pub fn index_of<'t>(text: &'t str, markers: &[String; 2]) -> Option<&'t str> {
    let start = text.find(markers[0].as_str())? + markers[0].len();
    let end = text[start..].find(markers[1].as_str())? + start;
    Some(text[start..end].trim())
}

/// Render `pack` of `loaded`, reading each file at most `max_bytes`.
pub fn render(loaded: &Loaded, pack: &LoadedPack, max_bytes: u64) -> Rendered {
    let mut sources = vec![(pack.file.clone(), pack.file_meta)];
    let mut entries: Vec<Entry> = Vec::new();
    for file in &pack.pack.files {
        if file.strategy == Strategy::Skip {
            continue;
        }
        let absolute = loaded.resolve(&file.path.0);
        let (content, meta) = delivery::read_for_delivery_meta(&absolute, max_bytes);
        sources.push((absolute.clone(), meta.as_ref().map(Meta::from)));
        entries.push(Entry {
            shown: file.path.0.clone(),
            content,
            absolute,
            strategy: file.strategy,
            priority: file.priority,
            note: file.note.clone(),
        });
    }
    let mut reductions: Vec<Reduction> = Vec::new();
    let mut body = body_of(loaded, pack, &entries, max_bytes);
    if let Some(budget) = pack.pack.budget_tokens {
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        while estimate_tokens(&body.0) > budget {
            // The lowest priority first; among equals, the one read last.
            let Some(i) = (0..entries.len())
                .filter(|i| {
                    entries[*i].strategy.degraded().is_some()
                        && matches!(entries[*i].content, FileBody::Text(_))
                })
                .min_by_key(|i| (entries[*i].priority, std::cmp::Reverse(*i)))
            else {
                break;
            };
            if let Some(to) = entries[i].strategy.degraded() {
                entries[i].strategy = to;
                let shown = entries[i].shown.clone();
                reductions.retain(|r| r.path != shown);
                reductions.push(Reduction { path: shown, to });
            }
            body = body_of(loaded, pack, &entries, max_bytes);
        }
    }
    let (text, files_loaded) = body;
    let tokens = estimate_tokens(&text);
    let mut out = text;
    out.push_str(&rule());
    let _ = write!(
        out,
        "\nContext: {files_loaded} files loaded (~{tokens} tokens)."
    );
    if let Some(budget) = pack.pack.budget_tokens {
        if !reductions.is_empty() {
            let said: Vec<String> = reductions
                .iter()
                .map(|r| match r.to {
                    Strategy::Index => format!("{} as its index", r.path),
                    _ => format!("{} as a mention", r.path),
                })
                .collect();
            let _ = write!(
                out,
                "\nOver the {budget}-token budget: {} (read the whole files when you need them).",
                said.join(", ")
            );
        }
        if tokens > usize::try_from(budget).unwrap_or(usize::MAX) {
            let _ = write!(
                out,
                "\nStill over the {budget}-token budget with every file reduced as far as it goes."
            );
        }
    }
    out.push('\n');
    Rendered {
        text: out,
        files_loaded,
        tokens,
        reductions,
        sources,
    }
}

/// The header, the sections and the mentions; with the number of files loaded.
fn body_of(
    loaded: &Loaded,
    pack: &LoadedPack,
    entries: &[Entry],
    max_bytes: u64,
) -> (String, usize) {
    let mut out = format!(
        "PROJECT CONTEXT: {} (context pack, auto-loaded by a hook: already in your context \
         window)\n{}\n",
        pack.pack.name,
        rule()
    );
    let order: Vec<&str> = entries.iter().map(|e| e.shown.as_str()).collect();
    if !order.is_empty() {
        let _ = writeln!(out, "Read order: {}", order.join(", "));
    }
    out.push('\n');
    let mut loaded_files = 0;
    for pass in [Strategy::Verbatim, Strategy::Index] {
        for entry in entries.iter().filter(|e| e.strategy == pass) {
            let (section, counts) = section(loaded, entry, max_bytes);
            out.push_str(&section);
            out.push('\n');
            loaded_files += usize::from(counts);
        }
    }
    let mentions: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.strategy == Strategy::Mention)
        .collect();
    if !mentions.is_empty() {
        out.push_str("Not loaded (read them when they matter):\n");
        for entry in mentions {
            let missing = if entry.content == FileBody::Unavailable {
                " (missing)"
            } else {
                ""
            };
            let note = entry
                .note
                .as_deref()
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .unwrap_or("read it when you need it");
            let _ = writeln!(out, "- {}{missing}: {note}", entry.shown);
        }
        out.push('\n');
    }
    (out, loaded_files)
}

/// One file's section and whether its content counts as loaded.
fn section(loaded: &Loaded, entry: &Entry, max_bytes: u64) -> (String, bool) {
    let name = &entry.shown;
    match &entry.content {
        FileBody::Unavailable => (
            format!(
                "--- {name} (missing: no file at {}) ---\n",
                entry.absolute.display()
            ),
            false,
        ),
        FileBody::TooLarge(size) => (
            format!(
                "--- {name} (not inlined: {size} bytes, over the {max_bytes}-byte limit; read \
                 it when you need it) ---\n"
            ),
            false,
        ),
        FileBody::Empty => (format!("--- {name} ---\n(empty)\n"), true),
        FileBody::Text(text) => {
            let text = delivery::trim_trailing_newlines(text);
            if entry.strategy == Strategy::Index {
                match index_of(text, &loaded.markers) {
                    Some("") => (format!("--- {name} (index) ---\n(no entries)\n"), true),
                    Some(index) => (
                        format!(
                            "--- {name} (index: read the full entry in the file when it is \
                             relevant) ---\n{index}\n"
                        ),
                        true,
                    ),
                    None => (
                        format!("--- {name} (no index markers: the whole file) ---\n{text}\n"),
                        true,
                    ),
                }
            } else {
                (format!("--- {name} ---\n{text}\n"), true)
            }
        }
    }
}
