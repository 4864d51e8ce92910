//! The window as the active branch: each file a tool call carried is recorded with that call
//! (its `tool_use_id`, the transcript entry that carried it), so a rewind that leaves the call
//! off the client's active branch takes what it carried out of the window, and the file is
//! due again.

use serde_json::{Value, json};

use crate::state::fields;
use crate::state::{Audience, IN_CONTEXT, State};

/// How many calls' carriers a window keeps: a rewind further back than that many calls that
/// carried files leaves the oldest in the window.
const CARRIER_RECORDS: usize = 256;

/// The carrier of what the prompt `prompt_id` carried (a skill the client expanded, the packs
/// sent with it): the transcript names the prompt by its `promptId`.
pub fn prompt_carrier(prompt_id: &str) -> String {
    format!("prompt:{prompt_id}")
}

/// Note that the main agent's call (or prompt, [`prompt_carrier`]) `call` carried `files` whole.
pub fn note_carried(s: &mut State, call: &str, files: &[String]) {
    if files.is_empty() {
        return;
    }
    let records = s.array_mut(fields::CARRIERS);
    let index = if let Some(at) = records.iter().position(|r| record_id(r) == Some(call)) {
        at
    } else {
        records.push(json!({fields::CALL_ID: call, fields::CALL_FILES: []}));
        records.len() - 1
    };
    if let Some(Value::Array(list)) = records[index].get_mut(fields::CALL_FILES) {
        for file in files {
            if !list.iter().any(|f| f.as_str() == Some(file)) {
                list.push(Value::from(file.as_str()));
            }
        }
    }
    let excess = records.len().saturating_sub(CARRIER_RECORDS);
    records.drain(..excess);
}

/// Take what the calls `abandoned` carried out of the window: each of their files still in it
/// is queued again (once: a file carried by a call the branch keeps stays), and their records
/// go. Returns the files queued.
pub fn take_back(s: &mut State, abandoned: &[String]) -> Vec<String> {
    if abandoned.is_empty() || s.items(fields::CARRIERS).is_empty() {
        return Vec::new();
    }
    let (gone, kept): (Vec<Value>, Vec<Value>) = s
        .items(fields::CARRIERS)
        .iter()
        .cloned()
        .partition(|r| record_id(r).is_some_and(|id| abandoned.iter().any(|a| a == id)));
    if gone.is_empty() {
        return Vec::new();
    }
    let still_carried = |file: &str| {
        kept.iter().any(|r| {
            r[fields::CALL_FILES]
                .as_array()
                .is_some_and(|l| l.iter().any(|f| f.as_str() == Some(file)))
        })
    };
    let mut out: Vec<String> = Vec::new();
    for record in &gone {
        for file in record[fields::CALL_FILES].as_array().into_iter().flatten() {
            let Some(file) = file.as_str() else {
                continue;
            };
            if s.has_path(IN_CONTEXT, file)
                && !still_carried(file)
                && !out.iter().any(|o| o == file)
            {
                out.push(file.to_owned());
            }
        }
    }
    for file in &out {
        s.owe(Audience::Main, file);
    }
    s.set(fields::CARRIERS, Value::from(kept));
    out
}

/// Mark the window's branch as checked at prompt `prompt`; false when it was already.
pub fn check_branch_at(s: &mut State, prompt: &str) -> bool {
    if s.str(fields::BRANCH_AT) == Some(prompt) {
        return false;
    }
    s.set(fields::BRANCH_AT, Value::from(prompt));
    true
}

fn record_id(record: &Value) -> Option<&str> {
    record[fields::CALL_ID].as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::QUEUED;

    fn state() -> State {
        State::parse(r#"{"preloadedFiles": ["/std", "/a", "/b", "/c"], "pendingPreloads": []}"#)
            .unwrap()
    }

    fn owned(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn what_an_abandoned_call_carried_is_due_again_once() {
        let mut s = state();
        note_carried(&mut s, "toolu_1", &owned(&["/a"]));
        note_carried(&mut s, "toolu_2", &owned(&["/b"]));
        note_carried(&mut s, "toolu_2", &owned(&["/b", "/c"]));
        note_carried(&mut s, "toolu_3", &owned(&[]));
        assert_eq!(s.items(fields::CARRIERS).len(), 2);
        let back = take_back(&mut s, &owned(&["toolu_2", "toolu_9"]));
        assert_eq!(back, owned(&["/b", "/c"]));
        assert_eq!(s.path_list(IN_CONTEXT), owned(&["/std", "/a"]));
        assert_eq!(s.path_list(QUEUED), owned(&["/b", "/c"]));
        // Its record is gone: the same rewind seen again takes nothing more.
        assert!(take_back(&mut s, &owned(&["toolu_2"])).is_empty());
        assert_eq!(s.items(fields::CARRIERS).len(), 1);
    }

    #[test]
    fn a_file_a_kept_call_also_carried_stays() {
        let mut s = state();
        note_carried(&mut s, "toolu_1", &owned(&["/a"]));
        note_carried(&mut s, "toolu_2", &owned(&["/a", "/b"]));
        assert_eq!(take_back(&mut s, &owned(&["toolu_2"])), owned(&["/b"]));
        assert!(s.has_path(IN_CONTEXT, "/a"));
    }

    #[test]
    fn the_branch_is_checked_once_per_prompt() {
        let mut s = state();
        assert!(check_branch_at(&mut s, "u1"));
        assert!(!check_branch_at(&mut s, "u1"));
        assert!(check_branch_at(&mut s, "u2"));
    }

    #[test]
    fn a_window_keeps_the_latest_calls_records() {
        let mut s = state();
        for i in 0..(CARRIER_RECORDS + 5) {
            note_carried(&mut s, &format!("toolu_{i}"), &owned(&["/a"]));
        }
        let records = s.items(fields::CARRIERS);
        assert_eq!(records.len(), CARRIER_RECORDS);
        assert_eq!(record_id(&records[0]), Some("toolu_5"));
    }
}
