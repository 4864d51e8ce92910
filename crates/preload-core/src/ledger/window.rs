//! What a context window holds across the client's events: the files the latest tool call (or
//! a resume's SessionStart) carried, which a compaction keeps, and the skills the client process
//! holds.

use serde_json::Value;

use crate::fields;
use crate::state::State;

/// Note that the main agent's tool call `call` (its `tool_use_id`) carried `files` in its
/// answer `text`: several hooks of one call add to one record; a later call starts a new one. A
/// later call that carried nothing ends the record of an earlier one: after a compaction the
/// client keeps only the call in flight, so what an earlier call carried is not in the new
/// context window. A file the call carried only some parts of (its last ones, completing what
/// earlier calls began) is not noted: the new window would hold those parts alone.
pub fn note_call_deliveries(s: &mut State, call: Option<&str>, files: &[String], text: &str) {
    let Some(call) = call.filter(|c| !c.is_empty()) else {
        return;
    };
    let partly = partly_held(text);
    let files: Vec<String> = files
        .iter()
        .filter(|f| !partly.contains(f))
        .cloned()
        .collect();
    let files = files.as_slice();
    let same_call = s
        .get(fields::LAST_CALL_DELIVERIES)
        .and_then(|r| r.get(fields::LAST_CALL_ID))
        .and_then(Value::as_str)
        == Some(call);
    if files.is_empty() {
        if !same_call {
            s.remove(fields::LAST_CALL_DELIVERIES);
        }
        return;
    }
    let mut kept = if same_call {
        s.get(fields::LAST_CALL_DELIVERIES)
            .map(|r| crate::state::strings_of(r.get(fields::LAST_CALL_FILES)))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    for file in files {
        if !kept.contains(file) {
            kept.push(file.clone());
        }
    }
    s.set(
        fields::LAST_CALL_DELIVERIES,
        serde_json::json!({fields::LAST_CALL_ID: call, fields::LAST_CALL_FILES: kept}),
    );
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

/// Note that SessionStart `source` (a resume) delivered `files`. The client holds a
/// SessionStart's contexts until its next request; when it compacts before that request (a
/// resumed conversation compacted at once, or `claude -p /compact --resume`), they come after
/// the summary, in the new context window, like the tool call a compaction happens after. The
/// record replaces any tool call's: that call belongs to the client process that is gone.
pub fn note_start_deliveries(s: &mut State, source: &str, files: &[String]) {
    s.set(
        fields::LAST_CALL_DELIVERIES,
        serde_json::json!({
            fields::LAST_CALL_ID: format!("session-start({source})"),
            fields::LAST_CALL_FILES: files,
        }),
    );
}

/// The files the latest tool call carried (a compaction starts a new context window that holds
/// them: the client keeps the call it happened after). The record stays: until another call
/// replaces it, that call is still the latest, and a second compaction keeps it too.
pub fn last_call_deliveries(s: &State) -> Vec<String> {
    s.get(fields::LAST_CALL_DELIVERIES)
        .map(|r| crate::state::strings_of(r.get(fields::LAST_CALL_FILES)))
        .unwrap_or_default()
}

/// The paths of which a text holds some labelled parts (`(part i/n)`) but not every one of the
/// `n`: the rest went out, or goes out, with other answers.
fn partly_held(text: &str) -> Vec<String> {
    let mut parts: Vec<(String, usize, Vec<usize>)> = Vec::new();
    for line in text.lines() {
        let Some(inner) = line
            .strip_prefix("[Preloaded: ")
            .and_then(|l| l.strip_suffix(']'))
        else {
            continue;
        };
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
        .map(|(path, ..)| path)
        .collect()
}
