//! What a context window holds across the client's events: the files each recent tool call (or
//! a resume's SessionStart) carried, of which a compaction keeps the latest response's, and the
//! skills the client process holds.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::fields;
use crate::session::{self, SEEDING};
use crate::state::{self, State};

/// How many calls' records a window keeps: more than one response holds calls.
const CALL_RECORDS: usize = 64;

/// Note that the main agent's tool call `call` (its `tool_use_id`) carried `files` in its
/// answer `text`: several hooks of one call add to its record, each call has its own, the
/// latest last. A compaction keeps every call of the client's latest response (the client's
/// transcript names them), or without the transcript the latest call alone: a call that carried
/// nothing marks the record before it superseded. A file the call carried only some parts of
/// is not noted as a file: when they are its first parts, and its part progress says so, how
/// many is noted (a compaction keeps them and the file goes on from there); its last ones alone
/// are not noted at all.
pub fn note_call_deliveries(s: &mut State, call: Option<&str>, files: &[String], text: &str) {
    let Some(call) = call.filter(|c| !c.is_empty()) else {
        return;
    };
    let cut = cut_files(text);
    let files: Vec<String> = files
        .iter()
        .filter(|f| !cut.iter().any(|(p, ..)| p == *f))
        .cloned()
        .collect();
    let (begun, stashed) = first_parts(s, cut);
    let mut records = records_of(s);
    let at = records.iter().position(|r| record_id(r) == Some(call));
    if files.is_empty() && begun.is_empty() && stashed.is_empty() {
        match records.last_mut() {
            Some(last) if at.is_none() && !is_superseded(last) => {
                last[fields::CALL_SUPERSEDED] = Value::Bool(true);
                s.set(fields::CALL_DELIVERIES, Value::from(records));
            }
            _ => {}
        }
        return;
    }
    let index = at.unwrap_or_else(|| {
        records.push(serde_json::json!({fields::CALL_ID: call, fields::CALL_FILES: []}));
        records.len() - 1
    });
    let record = &mut records[index];
    let mut kept = crate::state::strings_of(record.get(fields::CALL_FILES));
    let mut cut_stashed = crate::state::strings_of(record.get(fields::CALL_STASHED));
    for file in files {
        if !kept.contains(&file) {
            kept.push(file);
        }
    }
    for path in stashed {
        if !cut_stashed.contains(&path) {
            cut_stashed.push(path);
        }
    }
    record[fields::CALL_FILES] = Value::from(kept);
    if !cut_stashed.is_empty() {
        record[fields::CALL_STASHED] = Value::from(cut_stashed);
    }
    if !begun.is_empty() {
        let mut parts = record
            .get(fields::CALL_PARTS)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (path, done) in begun {
            parts.insert(path, Value::from(done));
        }
        record[fields::CALL_PARTS] = Value::Object(parts);
    }
    let excess = records.len().saturating_sub(CALL_RECORDS);
    records.drain(..excess);
    s.set(fields::CALL_DELIVERIES, Value::from(records));
}

/// The window's call records, the latest last.
fn records_of(s: &State) -> Vec<Value> {
    s.get(fields::CALL_DELIVERIES)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A record's call.
fn record_id(record: &Value) -> Option<&str> {
    record.get(fields::CALL_ID).and_then(Value::as_str)
}

/// Whether a later call started after the record's.
fn is_superseded(record: &Value) -> bool {
    record.get(fields::CALL_SUPERSEDED) == Some(&Value::Bool(true))
}

/// Of the files `cut` (from [`cut_files`]) whose first parts an answer held: those whose part
/// progress in `s` says so, with how many; and those whose next part waits in the main agent's
/// stash (a stashed text cut to fit one answer).
fn first_parts(s: &State, cut: Vec<(String, usize, usize)>) -> (Vec<(String, u64)>, Vec<String>) {
    let (mut begun, mut stashed) = (Vec::new(), Vec::new());
    for (path, n, first) in cut.into_iter().filter(|(.., first)| *first > 0) {
        let done = s
            .get(fields::PRELOAD_PARTS)
            .and_then(|p| p.get(&path))
            .and_then(Value::as_u64);
        if done == Some(first as u64) {
            begun.push((path, first as u64));
        } else {
            let next = format!("[Preloaded: {path} (part {}/{n})]", first + 1);
            if main_stash(s)
                .iter()
                .any(|e| stash_text(e).starts_with(&next))
            {
                stashed.push(path);
            }
        }
    }
    (begun, stashed)
}

/// The main agent's stash entries of `s`.
fn main_stash(s: &State) -> Vec<&Value> {
    s.get(fields::STASH)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| fields::StashEntry::agent_of(e).is_empty())
        .collect()
}

/// The text of a stash entry.
fn stash_text(entry: &Value) -> &str {
    fields::StashEntry::content_of(entry)
}

/// What the client keeps of a context window at a compaction: the calls of its latest
/// response, with what the hooks added to them (their records stay: until another response
/// replaces it, a second compaction keeps the same calls).
#[derive(Debug, Default)]
pub struct KeptCall {
    /// The files they carried whole.
    pub files: Vec<String>,
    /// The files of which they carried the first parts, and how many.
    parts: Vec<(String, u64)>,
    /// The files of which they carried the first parts of a cut waiting in the stash.
    stashed: Vec<String>,
    /// The stash entries holding those cuts' other parts.
    stash: Vec<Value>,
}

impl KeptCall {
    /// The calls of the window `s` a compaction keeps: a resume's SessionStart texts when no
    /// call came after them; else the calls `in_flight` names (the latest response's, from the
    /// client's transcript); without them, the latest call, unless a later one carried nothing.
    pub fn of(s: &State, in_flight: Option<&[String]>) -> Self {
        let records = records_of(s);
        let latest = records.last().filter(|r| !is_superseded(r));
        let resumed = latest
            .and_then(record_id)
            .is_some_and(|id| id.starts_with(RESUME_RECORD_PREFIX));
        let chosen: Vec<&Value> = match in_flight {
            Some(ids) if !resumed => records
                .iter()
                .filter(|r| record_id(r).is_some_and(|id| ids.iter().any(|c| c == id)))
                .collect(),
            _ => latest.into_iter().collect(),
        };
        let mut kept = Self::default();
        for record in chosen {
            for file in crate::state::strings_of(record.get(fields::CALL_FILES)) {
                if !kept.files.contains(&file) {
                    kept.files.push(file);
                }
            }
            for path in crate::state::strings_of(record.get(fields::CALL_STASHED)) {
                if !kept.stashed.contains(&path) {
                    kept.stashed.push(path);
                }
            }
            if let Some(parts) = record.get(fields::CALL_PARTS).and_then(Value::as_object) {
                for (path, done) in parts {
                    if let Some(done) = done.as_u64() {
                        kept.parts.retain(|(p, _)| p != path);
                        kept.parts.push((path.clone(), done));
                    }
                }
            }
        }
        kept.stash = main_stash(s)
            .into_iter()
            .filter(|e| {
                let text = stash_text(e);
                kept.stashed
                    .iter()
                    .any(|path| text.starts_with(&format!("[Preloaded: {path} (part ")))
            })
            .cloned()
            .collect();
        kept
    }

    /// Put it into the new context window `s`: its files in context; the files it began, their
    /// progress kept and the rest queued; the cuts waiting in the stash, their files in context
    /// and their other parts still stashed.
    pub fn carry_into(&self, s: &mut State) {
        for file in self.files.iter().chain(&self.stashed) {
            s.push_unique(fields::PRELOADED_FILES, file);
        }
        for (path, done) in &self.parts {
            s.object_mut(fields::PRELOAD_PARTS)
                .insert(path.clone(), Value::from(*done));
            s.push_unique(fields::PENDING_PRELOADS, path);
        }
        s.array_mut(fields::STASH)
            .extend(self.stash.iter().cloned());
    }
}

/// The skills a new client process holds at SessionStart `source`: on a resume, those a
/// compaction of the conversation put back (the client recalls them from the transcript);
/// otherwise (a new conversation, `/clear`) none. A compaction keeps what the process holds.
pub fn skills_held_at_start(s: &mut State, source: &str) {
    match source {
        "compact" => {}
        "resume" => {
            let reloaded = s.strings(fields::RELOADED_SKILLS);
            let held: Vec<String> = s
                .strings(fields::INVOKED_SKILLS)
                .into_iter()
                .filter(|name| reloaded.contains(name))
                .collect();
            if held.is_empty() {
                s.remove(fields::INVOKED_SKILLS);
            } else {
                s.set(fields::INVOKED_SKILLS, serde_json::json!(held));
            }
        }
        _ => {
            s.remove(fields::INVOKED_SKILLS);
            s.remove(fields::RELOADED_SKILLS);
        }
    }
}

/// The record of a resume's SessionStart texts: `session-start(resume)`.
const RESUME_RECORD_PREFIX: &str = "session-start(";

/// Note that SessionStart `source` (a resume) delivered `files`. The client holds a
/// SessionStart's contexts until its next request; when it compacts before that request (a
/// resumed conversation compacted at once, or `claude -p /compact --resume`), they come after
/// the summary, in the new context window, like the calls a compaction happens after. The
/// record replaces the tool calls': they belong to the client process that is gone.
pub fn note_start_deliveries(s: &mut State, source: &str, files: &[String]) {
    s.set(
        fields::CALL_DELIVERIES,
        serde_json::json!([{
            fields::CALL_ID: format!("{RESUME_RECORD_PREFIX}{source})"),
            fields::CALL_FILES: files,
        }]),
    );
}

/// The files of which a text holds some labelled parts (`(part i/n)`) but not every one of
/// the `n`, each with how many parts it holds from the first on without a gap (0 when it does
/// not hold the first): the rest went out, or goes out, with other answers.
fn cut_files(text: &str) -> Vec<(String, usize, usize)> {
    let mut parts: Vec<(String, usize, Vec<usize>)> = Vec::new();
    for inner in crate::delivery::headers(text) {
        let Some((_, label)) = inner.rsplit_once(" (part ") else {
            continue;
        };
        let Some((i, n)) = label
            .strip_suffix(')')
            .and_then(|l| l.split_once('/'))
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        else {
            continue;
        };
        let path = crate::delivery::header_path(inner);
        match parts.iter_mut().find(|(p, ..)| p == path) {
            Some((_, _, seen)) => seen.push(i),
            None => parts.push((path.to_owned(), n, vec![i])),
        }
    }
    parts
        .into_iter()
        .filter(|(_, n, seen)| !(1..=*n).all(|i| seen.contains(&i)))
        .map(|(path, n, seen)| {
            let first = (1..=n).take_while(|i| seen.contains(i)).count();
            (path, n, first)
        })
        .collect()
}

/// The fields of a context window's record that a `--resume` of its conversation goes on from.
const WINDOW_FIELDS: [&str; 12] = [
    fields::SESSION_ID,
    fields::PRELOADED_FILES,
    fields::PENDING_PRELOADS,
    fields::TOUCHED_DIRS,
    fields::PRELOAD_PARTS,
    fields::PRELOADED_STAMPS,
    fields::STASH,
    fields::INVOKED_SKILLS,
    fields::RELOADED_SKILLS,
    fields::CALL_DELIVERIES,
    fields::DISCOVERED_CHECKLISTS,
    fields::INJECTED_RULES,
];

/// Keep the record of the context window `s` holds (a session's or a seed's) when another window
/// replaces it there (`/clear`, a new conversation taking the session over): as an ended record
/// (`<sessions>/.seeds/<pid>.<conversation>.ended.json`, the owner left out) that a later
/// `--resume` of its conversation goes on from, as from a process's ended seed. Nothing when the
/// window names no conversation, or `conversation` is its own.
pub fn archive_window(sessions: &Path, s: &State, conversation: &str) {
    let Some(old) = s
        .str(fields::SESSION_ID)
        .filter(|c| !c.is_empty() && *c != conversation)
    else {
        return;
    };
    let safe: String = old
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let pid = s.pid(fields::PID).unwrap_or(0);
    let mut record = State::default();
    record.set(fields::LIFECYCLE, Value::from(SEEDING));
    for key in WINDOW_FIELDS {
        if let Some(value) = s.get(key) {
            record.set(key, value.clone());
        }
    }
    let seeds = sessions.join(session::SEEDS_DIR);
    if fs::create_dir_all(&seeds).is_ok() {
        let path = seeds.join(format!("{pid}.{safe}{}", session::ENDED_SUFFIX));
        let _ = state::save(&path, &record);
    }
}
