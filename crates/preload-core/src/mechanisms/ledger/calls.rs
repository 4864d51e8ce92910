//! The record of what each of the main agent's recent tool calls (or a resume's SessionStart)
//! carried into its context window, and what a compaction keeps of it: the calls of the
//! client's latest response.

use crate::primitives::env::Agent;
use crate::primitives::transcript;
use crate::state::{
    Audience, CallRecord, IN_CONTEXT, PartsCut, QUEUED, Records, StashEntry, State,
};

/// How many calls' records a window keeps: more than one response holds calls.
const CALL_RECORDS: usize = 64;

/// Note that the main agent's tool call `call` (its `tool_use_id`) carried `files` in its
/// answer `text`: several hooks of one call add to its record, each call has its own, the
/// latest last. A compaction keeps every call of the client's latest response (the client's
/// transcript names them), or without the transcript the latest call alone: a call that carried
/// nothing marks the record before it superseded. What the call carried of a file cut in parts
/// is noted by which parts it carried (see `Carried`).
pub fn note_call_deliveries(s: &mut State, call: Option<&str>, files: &[String], text: &str) {
    let Some(call) = call.filter(|c| !c.is_empty()) else {
        return;
    };
    let carried = Carried::of(s, files, text);
    super::branch::note_carried(s, call, &carried.files, text);
    if carried.is_empty() {
        s.supersede_latest_call(call);
        return;
    }
    s.change_call_record(Records::Calls, call, CALL_RECORDS, |record| {
        carried.add_to(record);
    });
}

/// What one answer carried into the context window, as a compaction that keeps it counts it.
#[derive(Debug, Default)]
struct Carried {
    /// Files whole.
    files: Vec<String>,
    /// Files of which it carried the first parts, their part progress saying how many, and
    /// how many parts their cut has.
    begun: Vec<(String, u64, u64)>,
    /// Files of which it carried the first parts of a cut whose next part waits in the stash.
    stashed: Vec<String>,
    /// Files of which it carried later parts `a` to `b` of `n`, the earlier ones not: a
    /// compaction keeps those, and the file goes on with the others.
    held: Vec<(String, [u64; 3])>,
}

impl Carried {
    fn of(s: &State, files: &[String], text: &str) -> Self {
        let cut = crate::primitives::delivery::cut_files(text);
        let mut carried = Self {
            files: files
                .iter()
                .filter(|f| !cut.iter().any(|c| &c.path == *f))
                .cloned()
                .collect(),
            ..Self::default()
        };
        for c in cut {
            if c.first > 1 {
                // Every delivery cuts a file the same way (the stash's cuts too), so the others
                // can be cut again for the new window (a cut of another number of parts is not
                // held: see `preload::parts_held`).
                carried
                    .held
                    .push((c.path, [c.first as u64, c.last as u64, c.n as u64]));
                continue;
            }
            // Its first parts (never all of them: `cut_files` leaves whole cuts out).
            let progress = s.parts_done(Audience::Main, &c.path);
            if progress == Some(c.last as u64) {
                carried.begun.push((c.path, c.last as u64, c.n as u64));
                continue;
            }
            let next = format!("[Preloaded: {} (part {}/{})]", c.path, c.last + 1, c.n);
            if s.stash_of(Audience::Main.agent_id())
                .iter()
                .any(|e| e.content().starts_with(&next))
            {
                carried.stashed.push(c.path);
            }
        }
        carried
    }

    fn is_empty(&self) -> bool {
        self.files.is_empty()
            && self.begun.is_empty()
            && self.stashed.is_empty()
            && self.held.is_empty()
    }

    /// Add it to a call's record.
    fn add_to(self, record: &mut CallRecord) {
        record.add_files(&self.files);
        record.add_stashed(&self.stashed);
        for (path, done, n) in self.begun {
            record.begin(&path, done, n);
        }
        for (path, run) in self.held {
            record.hold(&path, run);
        }
    }
}

/// Take the call records of `from` (a seed or its carry, adopted by a session) into `s`: the
/// calls `s` does not know follow its own, the latest last, as many as a window keeps. A call
/// whose PreToolUse answer carried files while the owner had no session yet is then the
/// session's latest call, which a compaction keeps.
pub fn adopt_call_records(s: &mut State, from: &State) {
    let adopted = from.call_records(Records::Calls);
    if adopted.is_empty() {
        return;
    }
    let mut records = s.call_records(Records::Calls);
    for record in adopted {
        if !records.iter().any(|r| r.tool_use_id == record.tool_use_id) {
            records.push(record);
        }
    }
    s.set_call_records(Records::Calls, records, CALL_RECORDS);
}

/// The latest call the records know of: the one that superseded the last record, or its own.
fn latest_known(records: &[CallRecord]) -> Option<&str> {
    let last = records.last()?;
    Some(last.superseded.as_deref().unwrap_or(&last.tool_use_id))
}

/// What the client keeps of a context window at a compaction: the calls of its latest
/// response, with what the hooks added to them (their records stay: until another response
/// replaces it, a second compaction keeps the same calls).
#[derive(Debug, Default)]
pub struct KeptCall {
    /// The files they carried whole.
    pub files: Vec<String>,
    /// The files of which they carried the first parts, how many, and the parts of their cut
    /// (unknown in a record written before it said).
    parts: Vec<(String, u64, Option<u64>)>,
    /// The files of which they carried the first parts of a cut waiting in the stash.
    stashed: Vec<String>,
    /// The stash entries holding those cuts' other parts.
    stash: Vec<StashEntry>,
    /// The files of which they carried later parts only: `[a, b, n]`.
    held: Vec<(String, [u64; 3])>,
}

impl KeptCall {
    /// The calls of the window `s` a compaction keeps: a resume's SessionStart texts when no
    /// call came after them; else the calls of the latest response, as the client's transcript
    /// (`in_flight`) names them; without it, the latest call, unless a later one carried nothing.
    ///
    /// The client writes its transcript behind: when the transcript does not name the latest
    /// call the records know of yet, the calls it does not name (the records after the last one
    /// it does) are the latest response's.
    ///
    /// The Codex CLI keeps no call: its summary replaces the whole history, the calls in flight
    /// included.
    pub fn of(s: &State, in_flight: Option<&transcript::Calls>, agent: Agent) -> Self {
        if agent == Agent::Codex {
            return Self::default();
        }
        let records = s.call_records(Records::Calls);
        let latest = records.last().filter(|r| r.superseded.is_none());
        let resumed = latest.is_some_and(|r| r.tool_use_id.starts_with(RESUME_RECORD_PREFIX));
        let named = |r: &CallRecord, ids: &dyn Fn(&str) -> bool| ids(&r.tool_use_id);
        let chosen: Vec<&CallRecord> = match in_flight {
            Some(calls) if !resumed => {
                let current = latest_known(&records).is_none_or(|id| calls.seen.contains(id));
                if current {
                    records
                        .iter()
                        .filter(|r| named(r, &|id| calls.latest.iter().any(|c| c == id)))
                        .collect()
                } else {
                    let after = records
                        .iter()
                        .rposition(|r| named(r, &|id| calls.seen.contains(id)))
                        .map_or(0, |i| i + 1);
                    records[after..].iter().collect()
                }
            }
            _ => latest.into_iter().collect(),
        };
        let mut kept = Self::default();
        for record in chosen {
            for file in &record.files {
                if !kept.files.contains(file) {
                    kept.files.push(file.clone());
                }
            }
            for path in &record.stashed {
                if !kept.stashed.contains(path) {
                    kept.stashed.push(path.clone());
                }
            }
            for (path, done, n) in record.begun() {
                kept.parts.retain(|(p, _, _)| *p != path);
                kept.parts.push((path, done, n));
            }
            for (path, run) in record.held() {
                kept.held.retain(|(p, _)| *p != path);
                kept.held.push((path, run));
            }
        }
        kept.stash = s.stash_of(Audience::Main.agent_id());
        kept.stash.retain(|e| {
            kept.stashed.iter().any(|path| {
                e.content()
                    .starts_with(&format!("[Preloaded: {path} (part "))
            })
        });
        kept
    }

    /// Put it into the new context window `s`: its files in context; the files it began, their
    /// progress kept and the rest queued; the files it carried later parts of, those parts held
    /// and the file queued for the others; the cuts waiting in the stash, their files in context
    /// and their other parts still stashed.
    pub fn carry_into(&self, s: &mut State) {
        for file in self.files.iter().chain(&self.stashed) {
            s.add_path(IN_CONTEXT, file);
        }
        for (path, done, n) in &self.parts {
            s.set_parts_done(Audience::Main, path, Some(*done));
            // The cut the parts were of (a cut not marked updated is its number alone): a file
            // changed since goes out again from its first part, marked updated, instead of
            // going on with the parts of another cut.
            if let Some(n) = n {
                let cut = PartsCut {
                    parts: *n,
                    updated: false,
                };
                s.set_parts_cut(Audience::Main, path, Some(cut));
            }
            s.add_path(QUEUED, path);
        }
        for (path, range) in &self.held {
            s.set_parts_held(path, Some(*range));
            s.add_path(QUEUED, path);
        }
        s.push_stash(&self.stash);
    }
}

/// The record of a resume's SessionStart texts: `session-start(resume)`.
const RESUME_RECORD_PREFIX: &str = "session-start(";

/// Note that SessionStart `source` (a resume) delivered `files`. The client holds a
/// SessionStart's contexts until its next request; when it compacts before that request (a
/// resumed conversation compacted at once, or `claude -p /compact --resume`), they come after
/// the summary, in the new context window, like the calls a compaction happens after. The
/// record replaces the tool calls': they belong to the client process that is gone.
///
/// `at`, the transcript's newest entry, is the one the text hangs off: a rewind to before it
/// takes back what the text carried (see [`super::branch::start_carrier`]).
pub fn note_start_deliveries(
    s: &mut State,
    source: &str,
    at: Option<&str>,
    files: &[String],
    text: &str,
) {
    let carried = Carried::of(s, files, text);
    if let Some(at) = at {
        super::branch::note_carried(s, &super::branch::start_carrier(at), &carried.files, text);
    }
    let mut record = CallRecord::new(&format!("{RESUME_RECORD_PREFIX}{source})"));
    carried.add_to(&mut record);
    s.set_call_records(Records::Calls, vec![record], CALL_RECORDS);
}
