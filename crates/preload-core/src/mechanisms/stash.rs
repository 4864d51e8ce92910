//! The stash (`pendingAllowInjections`, [`crate::state::fields::STASH`]): rule content waiting
//! for an agent's next `PostToolUse`, added in `PreToolUse` and taken out, within an output
//! budget, by the agent it is for.
//!
//! Every entry is a [`StashEntry`]; an agent sees only its own entries (the main agent's have
//! an empty `agentId`), and other agents' entries are never touched. An entry larger than one
//! output goes out in labelled pieces over the following calls, in order; nothing is cut
//! silently.

use std::collections::VecDeque;

use crate::primitives::delivery::{self, chars};
use crate::primitives::layout;
use crate::state::{StashEntry, State};

/// Append `entries` to the stash (the stash is created only when there is something to add).
pub fn push(state: &mut State, entries: &[StashEntry]) {
    if entries.is_empty() {
        return;
    }
    state.push_stash(entries);
}

/// The characters `agent`'s entries already take in its next output, each with its separator.
pub fn waiting(state: &State, agent: &str) -> usize {
    state
        .stash_of(agent)
        .iter()
        .map(|e| chars(e.content()) + 2)
        .sum()
}

/// Whether `path`'s block, or a part of it, waits in `agent`'s entries: the rest of the file
/// waits for it, so that its parts go out in order, one channel after the other.
pub fn holds_block_of(state: &State, agent: &str, path: &str) -> bool {
    state
        .stash_of(agent)
        .iter()
        .any(|e| delivery::block_paths(e.content()).iter().any(|p| p == path))
}

/// Take `agent`'s entries that fit `budget` characters out of the stash; their texts, in
/// order, or `None` when the state has no stash.
///
/// Entries after the first that does not fit stay, in order, for the next call. An entry
/// larger than the whole budget is cut into labelled pieces ([`layout::split_labelled`]), each
/// its own entry in its place: the first goes out now, the others on the next calls, in order,
/// before any later entry. A file's block is cut into the parts of `part_limit` characters
/// every delivery of it cuts (so a window that holds some of them can be sent the others); a
/// part larger than what is left of the budget waits for a call with room for it.
pub fn take(
    state: &mut State,
    agent: &str,
    budget: usize,
    part_limit: usize,
) -> Option<Vec<String>> {
    state.change_stash(agent, |entries| drain(entries, budget, part_limit))
}

/// Take the entries (one agent's) that fit `budget` out of `entries`; returns the texts.
fn drain(entries: &mut Vec<StashEntry>, budget: usize, part_limit: usize) -> Vec<String> {
    let mut taken = Vec::new();
    let mut used = 0;
    let mut kept = Vec::with_capacity(entries.len());
    let mut full = false;
    // Each entry with whether it is a piece cut in this call (never cut again).
    let mut queue: VecDeque<(StashEntry, bool)> = entries.drain(..).map(|e| (e, false)).collect();
    while let Some((entry, cut)) = queue.pop_front() {
        if full {
            kept.push(entry);
            continue;
        }
        let text = delivery::trim_trailing_newlines(entry.content()).to_owned();
        if text.is_empty() {
            continue;
        }
        let sep = if taken.is_empty() { 0 } else { 2 };
        let len = chars(&text);
        let block = text.starts_with(delivery::BLOCK_HEADER);
        if used + sep + len <= budget || (taken.is_empty() && cut && !block) {
            // A piece of text still over the budget (a budget smaller than a part's header)
            // goes as is; a file's block or part waits for room.
            used += sep + len;
            taken.push(text);
        } else if taken.is_empty() && len > budget && !cut && !layout::is_file_part(&text) {
            let rule = entry.rule_id();
            let label = if rule.is_empty() { "stashed" } else { rule };
            let pieces = layout::split_labelled(&text, label, budget, part_limit);
            for piece in pieces.into_iter().rev() {
                queue.push_front((entry.with_content(piece), true));
            }
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
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::state::fields;

    /// A state whose stash is `entries`.
    fn stash(entries: Value) -> State {
        let mut map = Map::new();
        map.insert(fields::STASH.to_owned(), entries);
        State::from_map(map)
    }

    /// The entries of `agent` a stash of `entries` holds.
    fn entries_of(entries: Value, agent: &str) -> Vec<StashEntry> {
        stash(entries).stash_of(agent)
    }

    #[test]
    fn drains_only_this_agent_within_budget() {
        let mut state = stash(json!([
            {"ruleId": "preload", "content": "A\n", "agentId": ""},
            {"ruleId": "heartbeat-warn", "content": "sub", "agentId": "sub1"},
            {"ruleId": "synthesis", "content": "B", "agentId": ""},
            {"ruleId": "x", "content": "C".repeat(50)},
        ]));
        let taken = take(&mut state, "", 10, 10);
        assert_eq!(taken, Some(vec!["A".to_owned(), "B".to_owned()]));
        assert_eq!(
            state.get(fields::STASH),
            Some(&json!([
                {"ruleId": "heartbeat-warn", "content": "sub", "agentId": "sub1"},
                {"ruleId": "x", "content": "C".repeat(50)},
            ]))
        );
    }

    /// Drain `agent` until its entries are gone; the outputs, each checked against `budget`.
    fn drain_all(state: &mut State, agent: &str, budget: usize) -> Vec<String> {
        let mut outputs = Vec::new();
        while !state.stash_of(agent).is_empty() {
            let taken = take(state, agent, budget, budget).unwrap();
            assert!(!taken.is_empty(), "every call hands something out");
            let text = taken.join("\n\n");
            assert!(chars(&text) <= budget, "{} > {budget}", chars(&text));
            outputs.push(text);
            assert!(outputs.len() < 100, "the stash drains");
        }
        outputs
    }

    #[test]
    fn an_oversized_entry_goes_out_in_labelled_parts_in_order() {
        let body = (0..300)
            .map(|i| format!("line {i:04}\n"))
            .collect::<Vec<_>>()
            .concat();
        let mut state = stash(json!([
            {"ruleId": "big-rule", "content": body, "agentId": ""},
            {"ruleId": "other", "content": "for the sub-agent", "agentId": "sub1"},
            {"ruleId": "after", "content": "AFTER", "agentId": ""},
        ]));
        let outputs = drain_all(&mut state, "", 1_000);
        assert!(outputs.len() >= 3, "{} outputs", outputs.len());
        let all = outputs.join("\n\n");
        let (parts, after) = all.rsplit_once("\n\n").unwrap();
        assert_eq!(after, "AFTER", "the next entry comes after the last part");
        let pieces: Vec<&str> = parts.split("\n\n").collect();
        let mut rebuilt = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            let (head, rest) = piece.split_once('\n').unwrap();
            assert_eq!(
                head,
                format!("[big-rule (part {}/{})]", i + 1, pieces.len())
            );
            rebuilt.push(rest);
        }
        assert_eq!(rebuilt.join("\n"), body.trim_end(), "every line, in order");
        assert_eq!(
            state.get(fields::STASH),
            Some(&json!([{"ruleId": "other", "content": "for the sub-agent", "agentId": "sub1"}])),
            "the sub-agent's entry stays"
        );
    }

    #[test]
    fn an_oversized_entry_of_blocks_keeps_small_blocks_whole_and_labels_a_large_one() {
        let big = (0..200)
            .map(|i| format!("row {i:04}\n"))
            .collect::<Vec<_>>()
            .concat();
        let text = delivery::join_blocks(&[
            delivery::block("/a.md", "small A"),
            delivery::block("/b.md", &big),
            delivery::block("/c.md", "small C"),
        ]);
        let mut state = stash(json!([{"ruleId": "preload", "content": text, "agentId": ""}]));
        let outputs = drain_all(&mut state, "", 900);
        let all = outputs.join("\n\n");
        assert!(all.starts_with("[Preloaded: /a.md]\nsmall A"), "{all}");
        assert!(
            all.trim_end().ends_with("[Preloaded: /c.md]\nsmall C"),
            "{all}"
        );
        let labels: Vec<&str> = all
            .lines()
            .filter(|l| l.starts_with("[Preloaded: /b.md"))
            .collect();
        let n = labels.len();
        assert!(n >= 2, "{labels:?}");
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(*label, format!("[Preloaded: /b.md (part {}/{n})]", i + 1));
        }
        assert_eq!(delivery::block_paths(&all), vec!["/a.md", "/b.md", "/c.md"]);
    }

    #[test]
    fn a_budget_smaller_than_a_label_still_drains() {
        let mut entries = entries_of(
            json!([{"ruleId": "a-rule-with-a-long-name", "content": "x".repeat(500)}]),
            "",
        );
        let mut calls = 0;
        while !entries.is_empty() {
            let taken = drain(&mut entries, 10, 10);
            assert_eq!(taken.len(), 1);
            calls += 1;
            assert!(calls < 1_000, "terminates");
        }
    }

    #[test]
    fn entries_are_pushed_and_counted_per_agent() {
        let mut state = State::default();
        push(&mut state, &[]);
        assert!(
            state.get(fields::STASH).is_none(),
            "nothing to add, nothing created"
        );
        assert_eq!(take(&mut state, "", 10, 10), None);
        push(
            &mut state,
            &[
                StashEntry::new("r", "abc", ""),
                StashEntry::new("r", "xy", "a1"),
            ],
        );
        assert_eq!(waiting(&state, ""), 5);
        assert_eq!(waiting(&state, "a1"), 4);
        assert_eq!(
            take(&mut state, "a1", 100, 100),
            Some(vec!["xy".to_owned()])
        );
        assert_eq!(waiting(&state, "a1"), 0);
        assert_eq!(waiting(&state, ""), 5);
    }

    /// A file's block is cut the way every delivery of the file cuts it (parts of the part
    /// size, not of the room left): a part larger than the room waits for a call with room.
    #[test]
    fn a_large_file_block_goes_out_in_the_files_own_parts_each_waiting_for_room() {
        let big = (0..400)
            .map(|i| format!("row {i:04}\n"))
            .collect::<Vec<_>>()
            .concat();
        let own = delivery::file_parts("/b.md", &big, 1_500);
        assert!(own.len() > 2);
        let text = delivery::block("/b.md", &big);
        let mut entries = entries_of(
            json!([{"ruleId": "preload", "content": text, "agentId": ""}]),
            "",
        );
        // Little room: nothing fits, and nothing is cut to fit.
        assert!(drain(&mut entries, 600, 1_500).is_empty());
        let mut out = Vec::new();
        for _ in 0..20 {
            out.extend(drain(&mut entries, 2_000, 1_500));
            if entries.is_empty() {
                break;
            }
        }
        let trimmed: Vec<String> = own
            .iter()
            .map(|p| delivery::trim_trailing_newlines(p).to_owned())
            .collect();
        assert_eq!(out, trimmed);
    }
}
