//! The stash, typed: `pendingAllowInjections` ([`fields::STASH`]), rule content waiting for an
//! agent's next `PostToolUse`, one [`StashEntry`] per text.
//!
//! An entry that does not read as one (not an object, or a member of another type) is no
//! agent's: it is never handed out, and a change of an agent's entries leaves it in its place.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{State, fields};

/// One entry of the stash: a rule's content for an agent. A member that is absent reads as
/// empty (the main agent's, for `agentId`) and stays absent when the entry is written again;
/// a member this release does not know is kept.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StashEntry {
    /// The rule that produced it.
    #[serde(default)]
    rule_id: Option<String>,
    /// The text.
    #[serde(default)]
    content: Option<String>,
    /// The agent it is for (`""` for the main agent).
    #[serde(default)]
    agent_id: Option<String>,
    /// Members this release does not know.
    #[serde(flatten)]
    other: Map<String, Value>,
}

impl StashEntry {
    const RULE_ID: &str = "ruleId";
    const CONTENT: &str = "content";
    const AGENT_ID: &str = "agentId";

    /// An entry of `rule_id` holding `content` for `agent` (`""` for the main agent).
    pub fn new(rule_id: &str, content: &str, agent: &str) -> Self {
        Self {
            rule_id: Some(rule_id.to_owned()),
            content: Some(content.to_owned()),
            agent_id: Some(agent.to_owned()),
            other: Map::new(),
        }
    }

    /// The rule that produced it (`""` when the entry does not say).
    pub fn rule_id(&self) -> &str {
        self.rule_id.as_deref().unwrap_or("")
    }

    /// The text (`""` when the entry holds none).
    pub fn content(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }

    /// The agent it is for (`""`, the main agent, when the entry does not say).
    pub fn agent_id(&self) -> &str {
        self.agent_id.as_deref().unwrap_or("")
    }

    /// The same entry holding `content` instead (a piece of its text).
    #[must_use]
    pub fn with_content(&self, content: String) -> Self {
        Self {
            content: Some(content),
            ..self.clone()
        }
    }

    /// A stored entry, when it reads as one.
    fn read(value: &Value) -> Option<Self> {
        Self::deserialize(value).ok()
    }

    /// As it is stored: `ruleId`, `content`, `agentId` (those it has), then the others.
    fn stored(&self) -> Value {
        let mut map = Map::new();
        let members = [
            (Self::RULE_ID, &self.rule_id),
            (Self::CONTENT, &self.content),
            (Self::AGENT_ID, &self.agent_id),
        ];
        for (key, member) in members {
            if let Some(text) = member {
                map.insert(key.to_owned(), Value::from(text.as_str()));
            }
        }
        map.extend(self.other.iter().map(|(k, v)| (k.clone(), v.clone())));
        Value::Object(map)
    }
}

impl State {
    /// Whether the state has a stash (an array, empty or not).
    pub fn has_stash(&self) -> bool {
        self.get(fields::STASH).is_some_and(Value::is_array)
    }

    /// The entries of the stash, in order (an entry that does not read as one is left out).
    pub fn stash(&self) -> Vec<StashEntry> {
        self.items(fields::STASH)
            .iter()
            .filter_map(StashEntry::read)
            .collect()
    }

    /// `agent`'s entries, in order.
    pub fn stash_of(&self, agent: &str) -> Vec<StashEntry> {
        let mut entries = self.stash();
        entries.retain(|e| e.agent_id() == agent);
        entries
    }

    /// Append `entries` to the stash (made, empty, when the state has none).
    pub fn push_stash(&mut self, entries: &[StashEntry]) {
        self.array_mut(fields::STASH)
            .extend(entries.iter().map(StashEntry::stored));
    }

    /// Append those of `entries` the stash does not hold yet, each once (the stash is made,
    /// empty, when the state has none).
    pub fn push_stash_once(&mut self, entries: &[StashEntry]) {
        let mut held = self.stash();
        let fresh: Vec<StashEntry> = entries
            .iter()
            .filter(|entry| {
                let new = !held.contains(entry);
                if new {
                    held.push((*entry).clone());
                }
                new
            })
            .cloned()
            .collect();
        self.push_stash(&fresh);
    }

    /// Change `agent`'s entries: `change` is given them in order and leaves the ones that stay.
    /// `None` when the state has no stash. The stash is written only when they changed: the
    /// last ones, left as they were, keep their places, and those before them (the pieces of
    /// an entry cut) take the place of the last entry that went or changed; every other entry
    /// stays as it is, where it is.
    pub fn change_stash<R>(
        &mut self,
        agent: &str,
        change: impl FnOnce(&mut Vec<StashEntry>) -> R,
    ) -> Option<R> {
        let items = self.get(fields::STASH)?.as_array()?;
        let (places, before): (Vec<usize>, Vec<StashEntry>) = items
            .iter()
            .enumerate()
            .filter_map(|(i, value)| Some((i, StashEntry::read(value)?)))
            .filter(|(_, entry)| entry.agent_id() == agent)
            .unzip();
        let mut after = before.clone();
        let out = change(&mut after);
        if after == before {
            return Some(out);
        }
        let same = before
            .iter()
            .rev()
            .zip(after.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let (gone, kept) = places.split_at(places.len() - same);
        let fresh = after[..after.len() - same].iter().map(StashEntry::stored);
        let at = gone.last().or(kept.first()).copied().unwrap_or(items.len());
        let list = self.array_mut(fields::STASH);
        let mut fresh = Some(fresh);
        let mut written = Vec::with_capacity(list.len());
        for (i, value) in list.drain(..).enumerate() {
            if i == at {
                written.extend(fresh.take().into_iter().flatten());
            }
            if gone.binary_search(&i).is_err() {
                written.push(value);
            }
        }
        written.extend(fresh.into_iter().flatten());
        *list = written;
        Some(out)
    }

    /// Empty the stash (made when the state has none).
    pub fn clear_stash(&mut self) {
        self.set(fields::STASH, Value::Array(Vec::new()));
    }

    /// Take the stash out of the state: its entries, or `None` when it had no stash (a field
    /// that is not one is taken out too).
    pub fn remove_stash(&mut self) -> Option<Vec<StashEntry>> {
        match self.remove(fields::STASH)? {
            Value::Array(items) => Some(items.iter().filter_map(StashEntry::read).collect()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::testing::state;

    #[test]
    fn an_entry_is_written_under_its_members_in_order() {
        let mut s = state(json!({"a": 1, "pendingAllowInjections": [], "z": 2}));
        s.push_stash(&[StashEntry::new("preload", "text", "")]);
        assert_eq!(
            s.to_pretty(),
            "{\n  \"a\": 1,\n  \"pendingAllowInjections\": [\n    {\n      \"ruleId\": \"preload\",\n      \"content\": \"text\",\n      \"agentId\": \"\"\n    }\n  ],\n  \"z\": 2\n}\n"
        );
    }

    #[test]
    fn an_entry_reads_absent_members_as_empty_and_keeps_unknown_ones() {
        let s = state(json!({"pendingAllowInjections": [
            {"content": "x", "later": [1]}, "not an entry", {"agentId": 5, "content": "y"}
        ]}));
        let entries = s.stash();
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(
            (
                entries[0].rule_id(),
                entries[0].content(),
                entries[0].agent_id()
            ),
            ("", "x", "")
        );
        assert_eq!(
            entries[0].with_content("z".into()).stored(),
            json!({"content": "z", "later": [1]})
        );
        assert!(
            state(json!({"pendingAllowInjections": "x"}))
                .stash()
                .is_empty()
        );
        assert!(!state(json!({"pendingAllowInjections": "x"})).has_stash());
    }

    #[test]
    fn a_state_read_and_written_back_unchanged_is_the_text_it_was() {
        let text = "{\n  \"pendingAllowInjections\": [\n    {\n      \"agentId\": \"\",\n      \"content\": \"A\",\n      \"ruleId\": \"r\"\n    },\n    {\n      \"content\": \"B\",\n      \"agentId\": \"a1\"\n    },\n    7\n  ],\n  \"pid\": 1\n}\n";
        let mut s = State::parse(text).unwrap();
        let entries = s.stash();
        assert_eq!(s.change_stash("a2", |mine| mine.len()), Some(0));
        assert_eq!(s.change_stash("", |mine| mine.len()), Some(1));
        assert!(!s.changed());
        s.push_stash_once(&entries);
        assert_eq!(s.to_pretty(), text);
    }

    #[test]
    fn a_change_keeps_the_other_agents_entries_in_their_places() {
        let mut s = state(json!({"pendingAllowInjections": [
            {"ruleId": "r", "content": "A", "agentId": ""},
            {"ruleId": "r", "content": "X", "agentId": "a1"},
            {"ruleId": "r", "content": "B", "agentId": ""},
            "kept",
            {"ruleId": "r", "content": "C", "agentId": ""}
        ]}));
        // A goes, B is cut in three pieces of which the first goes: the others take its place.
        s.change_stash("", |mine| {
            let b = mine[1].clone();
            mine.splice(
                0..2,
                [b.with_content("b2".into()), b.with_content("b3".into())],
            );
        });
        let contents: Vec<Value> = s
            .items(fields::STASH)
            .iter()
            .map(|v| v.get("content").cloned().unwrap_or(v.clone()))
            .collect();
        assert_eq!(
            contents,
            [
                json!("X"),
                json!("b2"),
                json!("b3"),
                json!("kept"),
                json!("C")
            ]
        );
        s.change_stash("", Vec::clear);
        assert_eq!(
            s.get(fields::STASH),
            Some(&json!([{"ruleId": "r", "content": "X", "agentId": "a1"}, "kept"]))
        );
        assert_eq!(state(json!({})).change_stash("", |_| ()), None);
    }

    #[test]
    fn entries_are_added_once() {
        let mut s = State::default();
        s.push_stash_once(&[]);
        assert_eq!(s.get(fields::STASH), Some(&json!([])));
        let entry = StashEntry::new("r", "A", "");
        s.push_stash_once(&[entry.clone(), entry.clone()]);
        s.push_stash_once(std::slice::from_ref(&entry));
        assert_eq!(s.stash(), [entry]);
        assert_eq!(s.remove_stash().map(|e| e.len()), Some(1));
        assert!(!s.has_stash());
        s.clear_stash();
        assert!(s.has_stash() && s.stash().is_empty());
    }
}
