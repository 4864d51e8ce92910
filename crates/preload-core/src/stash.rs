//! The stash ([`fields::STASH`]): rule content waiting for an agent's next `PostToolUse`,
//! added in `PreToolUse` and taken out, within an output budget, by the agent it is for.
//!
//! Every entry is a [`StashEntry`]; an agent sees only its own entries (the main agent's have
//! an empty `agentId`), and other agents' entries are never touched.

use serde_json::Value;

use crate::delivery::{self, chars};
use crate::fields::{self, StashEntry};
use crate::state::State;

/// Append `entries` to the stash (the stash is created only when there is something to add).
pub fn push(state: &mut State, entries: &[StashEntry]) {
    if entries.is_empty() {
        return;
    }
    state
        .array_mut(fields::STASH)
        .extend(entries.iter().map(StashEntry::to_value));
}

/// The characters `agent`'s entries already take in its next output, each with its separator.
pub fn waiting(state: &State, agent: &str) -> usize {
    match state.get(fields::STASH) {
        Some(Value::Array(entries)) => entries
            .iter()
            .filter(|e| StashEntry::agent_of(e) == agent)
            .map(|e| chars(StashEntry::content_of(e)) + 2)
            .sum(),
        _ => 0,
    }
}

/// Take `agent`'s entries that fit `budget` characters out of the stash; their texts, in
/// order, or `None` when the state has no stash.
///
/// One entry larger than the whole budget goes out as its head, its rest staying in the
/// stash; entries after the first that does not fit stay, in order, for the next call.
pub fn take(state: &mut State, agent: &str, budget: usize) -> Option<Vec<String>> {
    let Some(Value::Array(entries)) = state.0.get_mut(fields::STASH) else {
        return None;
    };
    Some(drain(entries, agent, budget))
}

/// Take `agent`'s entries that fit `budget` out of `entries`; returns the texts.
fn drain(entries: &mut Vec<Value>, agent: &str, budget: usize) -> Vec<String> {
    let mut taken = Vec::new();
    let mut used = 0;
    let mut kept = Vec::with_capacity(entries.len());
    let mut full = false;
    for mut entry in entries.drain(..) {
        if full || StashEntry::agent_of(&entry) != agent {
            kept.push(entry);
            continue;
        }
        let text = delivery::trim_trailing_newlines(StashEntry::content_of(&entry)).to_owned();
        if text.is_empty() {
            continue;
        }
        let sep = if taken.is_empty() { 0 } else { 2 };
        let len = chars(&text);
        if used + sep + len <= budget {
            used += sep + len;
            taken.push(text);
        } else if taken.is_empty() {
            // One entry larger than the whole budget: deliver its head, keep the rest queued.
            let head: String = text.chars().take(budget).collect();
            let rest: String = text.chars().skip(budget).collect();
            StashEntry::set_content(&mut entry, rest);
            taken.push(head);
            kept.push(entry);
            full = true;
        } else {
            kept.push(entry);
            full = true;
        }
    }
    *entries = kept;
    taken
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn drains_only_this_agent_within_budget() {
        let mut entries = vec![
            json!({"ruleId": "preload", "content": "A\n", "agentId": ""}),
            json!({"ruleId": "heartbeat-warn", "content": "sub", "agentId": "sub1"}),
            json!({"ruleId": "synthesis", "content": "B", "agentId": ""}),
            json!({"ruleId": "x", "content": "C".repeat(50)}),
        ];
        let taken = drain(&mut entries, "", 10);
        assert_eq!(taken, vec!["A", "B"]);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["agentId"], "sub1");
        assert_eq!(entries[1]["ruleId"], "x");
    }

    #[test]
    fn an_oversized_entry_goes_out_in_pieces() {
        let mut entries = vec![json!({"ruleId": "r", "content": "x".repeat(25)})];
        let first = drain(&mut entries, "", 10);
        assert_eq!(first, vec!["x".repeat(10)]);
        let second = drain(&mut entries, "", 10);
        let third = drain(&mut entries, "", 10);
        assert_eq!(second[0].len() + third[0].len(), 15);
        assert!(entries.is_empty());
    }

    #[test]
    fn entries_are_pushed_and_counted_per_agent() {
        let mut state = State::default();
        push(&mut state, &[]);
        assert!(
            state.get(fields::STASH).is_none(),
            "nothing to add, nothing created"
        );
        assert_eq!(take(&mut state, "", 10), None);
        push(
            &mut state,
            &[
                StashEntry::new("r", "abc", ""),
                StashEntry::new("r", "xy", "a1"),
            ],
        );
        assert_eq!(waiting(&state, ""), 5);
        assert_eq!(waiting(&state, "a1"), 4);
        assert_eq!(take(&mut state, "a1", 100), Some(vec!["xy".to_owned()]));
        assert_eq!(waiting(&state, "a1"), 0);
        assert_eq!(waiting(&state, ""), 5);
    }
}
