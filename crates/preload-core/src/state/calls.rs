//! The records of what a context window's calls carried, typed: `callDeliveries` (what each of
//! the main agent's recent calls carried, for a compaction to keep) and `preloadCarriers` (the
//! transcript entry that carried each file, for a rewind to take back). Both hold the same
//! record, [`CallRecord`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::parts::{part_run, stored_run};
use super::{State, fields};

/// Which list of call records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Records {
    /// [`fields::CALL_DELIVERIES`]: the latest calls and what a compaction keeps of them.
    Calls,
    /// [`fields::CARRIERS`]: the entries of the client's transcript that carried files.
    Carriers,
}

impl Records {
    fn key(self) -> &'static str {
        match self {
            Self::Calls => fields::CALL_DELIVERIES,
            Self::Carriers => fields::CARRIERS,
        }
    }
}

/// One call's record (or a prompt's, a start text's): the call and what it carried. The member
/// names are [`fields::CALL_ID`] and the other `CALL_` keys; a member this release does not
/// know is kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// The call's `tool_use_id` (or its carrier's name).
    pub tool_use_id: String,
    /// The files it carried whole.
    #[serde(default)]
    pub files: Vec<String>,
    /// Of those, the ones it carried as a new text of a file the window held before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub updated: Vec<String>,
    /// The files of which it carried the first parts of a cut whose other parts wait in the
    /// stash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stashed: Vec<String>,
    /// `{path: [parts, n]}`: the files of which it carried the first parts, how many, of how
    /// many (`{path: parts}` in a record written before it said).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    parts: Map<String, Value>,
    /// `{path: [a, b, n]}`: the files of which it carried parts `a` to `b` of `n`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    held: Map<String, Value>,
    /// The later call that started after it and carried nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<String>,
    /// Members this release does not know.
    #[serde(flatten)]
    other: Map<String, Value>,
}

impl CallRecord {
    /// The record of `id`, holding nothing yet.
    pub fn new(id: &str) -> Self {
        Self {
            tool_use_id: id.to_owned(),
            ..Self::default()
        }
    }

    /// Add `files` to the files it carried whole, each once.
    pub fn add_files(&mut self, files: &[String]) {
        add_unique(&mut self.files, files);
    }

    /// Add `files` to the ones it carried as a new text, each once.
    pub fn add_updated(&mut self, files: &[String]) {
        add_unique(&mut self.updated, files);
    }

    /// Add `files` to the ones whose other parts wait in the stash, each once.
    pub fn add_stashed(&mut self, files: &[String]) {
        add_unique(&mut self.stashed, files);
    }

    /// It carried the first `done` parts of `path`'s `n`.
    pub fn begin(&mut self, path: &str, done: u64, n: u64) {
        self.parts
            .insert(path.to_owned(), Value::from(vec![done, n]));
    }

    /// The files of which it carried the first parts: how many, and of how many parts (`None`
    /// in a record written before it said).
    pub fn begun(&self) -> Vec<(String, u64, Option<u64>)> {
        self.parts
            .iter()
            .filter_map(|(path, begun)| {
                let (done, n) = match begun {
                    Value::Array(pair) => (pair.first(), pair.get(1).and_then(Value::as_u64)),
                    done => (Some(done), None),
                };
                Some((path.clone(), done?.as_u64()?, n))
            })
            .collect()
    }

    /// It carried parts `a` to `b` of `path`'s `n`: several hooks of one call may each carry
    /// some, and the record holds the run from the lowest to the highest of one cut.
    pub fn hold(&mut self, path: &str, [first, last, n]: [u64; 3]) {
        let run = match self.held.get(path).and_then(part_run) {
            Some([before_first, before_last, m]) if m == n => {
                [first.min(before_first), last.max(before_last), n]
            }
            _ => [first, last, n],
        };
        self.held.insert(path.to_owned(), stored_run(run));
    }

    /// The runs of parts it carried: `(path, [a, b, n])`.
    pub fn held(&self) -> Vec<(String, [u64; 3])> {
        self.held
            .iter()
            .filter_map(|(path, run)| Some((path.clone(), part_run(run)?)))
            .collect()
    }
}

/// Add `items` to `list`, each once.
fn add_unique(list: &mut Vec<String>, items: &[String]) {
    for item in items {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
}

impl State {
    /// The records of `which`, the latest last; a record that does not read as one is left out.
    pub fn call_records(&self, which: Records) -> Vec<CallRecord> {
        self.items(which.key())
            .iter()
            .filter_map(|record| CallRecord::deserialize(record).ok())
            .collect()
    }

    /// Replace the records of `which`, keeping the latest `keep`.
    pub fn set_call_records(&mut self, which: Records, mut records: Vec<CallRecord>, keep: usize) {
        let excess = records.len().saturating_sub(keep);
        records.drain(..excess);
        let list = records
            .iter()
            .filter_map(|record| serde_json::to_value(record).ok())
            .collect::<Vec<_>>();
        self.set(which.key(), Value::from(list));
    }

    /// Change the record of `id` in `which` (made, the latest, when there is none) in its
    /// place, keeping the latest `keep` records: only that record is read and written again.
    pub fn change_call_record(
        &mut self,
        which: Records,
        id: &str,
        keep: usize,
        change: impl FnOnce(&mut CallRecord),
    ) {
        let list = self.array_mut(which.key());
        let at = list.iter().position(|r| record_id(r) == Some(id));
        let mut record = at
            .and_then(|i| CallRecord::deserialize(&list[i]).ok())
            .unwrap_or_else(|| CallRecord::new(id));
        change(&mut record);
        let Ok(value) = serde_json::to_value(&record) else {
            return;
        };
        match at {
            Some(i) => list[i] = value,
            None => list.push(value),
        }
        let excess = list.len().saturating_sub(keep);
        list.drain(..excess);
    }

    /// Whether `which` holds any record (one that does not read as one too).
    pub fn has_call_records(&self, which: Records) -> bool {
        !self.items(which.key()).is_empty()
    }

    /// Whether a record of `which` is `id`'s.
    pub fn has_call_record(&self, which: Records, id: &str) -> bool {
        self.items(which.key())
            .iter()
            .any(|r| record_id(r) == Some(id))
    }

    /// Mark the latest call record superseded by `call` (a later call that carried nothing),
    /// unless a record is `call`'s or the latest is marked already. Every PreToolUse comes
    /// here: the records are read and marked in place, not copied, and written only when the
    /// mark is new.
    pub fn supersede_latest_call(&mut self, call: &str) {
        let records = self.items(fields::CALL_DELIVERIES);
        let known = records.iter().any(|r| record_id(r) == Some(call));
        let marked = records
            .last()
            .is_none_or(|r| r.get(fields::CALL_SUPERSEDED).is_some());
        if known || marked {
            return;
        }
        if let Some(Value::Object(last)) = self.array_mut(fields::CALL_DELIVERIES).last_mut() {
            last.insert(fields::CALL_SUPERSEDED.to_owned(), Value::from(call));
        }
    }

    /// The newest prompt (its transcript `uuid`) whose branch the window was checked at.
    pub fn branch_at(&self) -> Option<&str> {
        self.str(fields::BRANCH_AT)
    }

    /// The window's branch was checked at `prompt`.
    pub fn set_branch_at(&mut self, prompt: &str) {
        self.set(fields::BRANCH_AT, Value::from(prompt));
    }
}

/// A record's call, read in place.
fn record_id(record: &Value) -> Option<&str> {
    record.get(fields::CALL_ID).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_written_under_the_keys_fields_names() {
        let mut record = CallRecord::new("toolu_1");
        record.add_files(&["/a".to_owned()]);
        record.add_updated(&["/a".to_owned()]);
        record.add_stashed(&["/s".to_owned()]);
        record.begin("/p", 1, 3);
        record.hold("/h", [2, 3, 4]);
        record.superseded = Some("toolu_2".to_owned());
        let value = serde_json::to_value(&record).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                fields::CALL_ID,
                fields::CALL_FILES,
                fields::CALL_UPDATED,
                fields::CALL_STASHED,
                fields::CALL_PARTS,
                fields::CALL_HELD,
                fields::CALL_SUPERSEDED
            ]
        );
        assert_eq!(CallRecord::deserialize(&value).unwrap(), record);
    }

    #[test]
    fn an_older_record_reads_and_an_unknown_member_is_kept() {
        let value = serde_json::json!({"toolUseId": "t", "files": ["/a"], "parts": {"/p": 2},
            "held": {"/h": [2, 3, 4], "/bad": "x"}, "later": {"k": 1}});
        let record = CallRecord::deserialize(&value).unwrap();
        assert_eq!(record.begun(), [("/p".to_owned(), 2, None)]);
        assert_eq!(record.held(), [("/h".to_owned(), [2, 3, 4])]);
        assert_eq!(
            serde_json::to_value(&record).unwrap()["later"],
            value["later"]
        );
    }

    #[test]
    fn a_held_run_spans_the_parts_of_one_cut() {
        let mut record = CallRecord::new("t");
        record.hold("/h", [3, 4, 6]);
        record.hold("/h", [2, 2, 6]);
        assert_eq!(record.held(), [("/h".to_owned(), [2, 4, 6])]);
        record.hold("/h", [1, 1, 5]);
        assert_eq!(
            record.held(),
            [("/h".to_owned(), [1, 1, 5])],
            "another cut replaces it"
        );
    }

    #[test]
    fn the_latest_call_is_superseded_once_and_never_by_its_own() {
        let mut s = State::default();
        s.supersede_latest_call("t1");
        assert!(
            s.get(fields::CALL_DELIVERIES).is_none(),
            "no record, no mark"
        );
        s.set_call_records(Records::Calls, vec![CallRecord::new("t1")], 8);
        s.supersede_latest_call("t1");
        assert_eq!(s.call_records(Records::Calls)[0].superseded, None);
        s.supersede_latest_call("t2");
        s.supersede_latest_call("t3");
        assert_eq!(
            s.call_records(Records::Calls)[0].superseded.as_deref(),
            Some("t2")
        );
        assert!(s.has_call_record(Records::Calls, "t1"));
        assert!(!s.has_call_record(Records::Carriers, "t1"));
    }

    #[test]
    fn a_record_is_changed_in_its_place() {
        let mut s = State::default();
        let records = (0..3).map(|i| CallRecord::new(&format!("t{i}"))).collect();
        s.set_call_records(Records::Calls, records, 8);
        s.change_call_record(Records::Calls, "t1", 8, |r| r.add_files(&["/a".to_owned()]));
        s.change_call_record(Records::Calls, "t9", 3, |r| r.add_files(&["/b".to_owned()]));
        let records = s.call_records(Records::Calls);
        let ids: Vec<&str> = records.iter().map(|r| r.tool_use_id.as_str()).collect();
        assert_eq!(
            ids,
            ["t1", "t2", "t9"],
            "a new record is the latest; the oldest went"
        );
        assert_eq!(records[0].files, ["/a"]);
        assert_eq!(records[2].files, ["/b"]);
    }

    #[test]
    fn the_prompt_a_branch_was_checked_at_is_written_in_its_place() {
        let text = "{\n  \"preloadBranchAt\": \"p1\",\n  \"pid\": 1\n}\n";
        let mut s = State::parse(text).unwrap();
        assert_eq!(s.branch_at(), Some("p1"));
        s.set_branch_at("p1");
        assert!(!s.changed());
        assert_eq!(s.to_pretty(), text);
        s.set_branch_at("p2");
        assert_eq!(
            s.to_pretty(),
            "{\n  \"preloadBranchAt\": \"p2\",\n  \"pid\": 1\n}\n"
        );
        let odd = State::parse("{\"preloadBranchAt\": 7}").unwrap();
        assert_eq!(odd.branch_at(), None, "not a prompt's id");
    }

    #[test]
    fn only_the_latest_records_are_kept() {
        let mut s = State::default();
        let records = (0..5).map(|i| CallRecord::new(&format!("t{i}"))).collect();
        s.set_call_records(Records::Carriers, records, 3);
        let ids: Vec<String> = s
            .call_records(Records::Carriers)
            .into_iter()
            .map(|r| r.tool_use_id)
            .collect();
        assert_eq!(ids, ["t2", "t3", "t4"]);
    }
}
