//! What a context window holds across the client's events: the files the latest tool call (or
//! a resume's SessionStart) carried, which a compaction keeps, and the skills the client process
//! holds.

use serde_json::Value;

use crate::fields;
use crate::state::State;

/// Note that the main agent's tool call `call` (its `tool_use_id`) carried `files`: several
/// hooks of one call add to one record; a later call starts a new one. A later call that
/// carried nothing ends the record of an earlier one: after a compaction the client keeps only
/// the call in flight, so what an earlier call carried is not in the new context window.
pub fn note_call_deliveries(s: &mut State, call: Option<&str>, files: &[String]) {
    let Some(call) = call.filter(|c| !c.is_empty()) else {
        return;
    };
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

/// The files the latest tool call carried, taken out of the record (a compaction starts a new
/// context window that holds them: the client keeps the call it happened after).
pub fn take_last_call_deliveries(s: &mut State) -> Vec<String> {
    s.remove(fields::LAST_CALL_DELIVERIES)
        .map(|r| crate::state::strings_of(r.get(fields::LAST_CALL_FILES)))
        .unwrap_or_default()
}
