//! What directive discovery records, typed: the directories already searched and the
//! directive files found in each (`touchedDirs`, [`fields::TOUCHED_DIRS`]), the checklists
//! found (`discoveredChecklists`, [`fields::DISCOVERED_CHECKLISTS`]) and the count of reads
//! since the last discovery (`directiveReadsWithoutClearing`, [`fields::DIRECTIVE_READS`]).
//!
//! `touchedDirs` is `{dir: [files]}`: full paths, or bare names (the engine's `session
//! activate` records those). A directory whose entry is not a list is searched, with no file
//! recorded; an entry of a list that is not a string is kept but names no file.

use serde_json::Value;

use super::{State, fields};

impl State {
    /// The searched directories, in order, each with the files recorded there as written.
    pub fn touched_dirs(&self) -> Vec<(String, Vec<String>)> {
        self.members(fields::TOUCHED_DIRS)
            .map(|(dir, files)| (dir.clone(), super::strings_of(Some(files))))
            .collect()
    }

    /// Every file recorded in a searched directory, as written, in order.
    pub fn touched_files(&self) -> Vec<String> {
        self.members(fields::TOUCHED_DIRS)
            .flat_map(|(_, files)| super::strings_of(Some(files)))
            .collect()
    }

    /// Whether `dir` was searched.
    pub fn is_touched(&self, dir: &str) -> bool {
        self.member(fields::TOUCHED_DIRS, dir).is_some()
    }

    /// Record `dir` as searched, with `files` found there added to those it holds (each once;
    /// an entry that is not a list is replaced).
    pub fn record_touched(&mut self, dir: &str, files: &[String]) {
        let mut list = match self.member(fields::TOUCHED_DIRS, dir) {
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        };
        for file in files {
            if !list.iter().any(|v| v.as_str() == Some(file)) {
                list.push(Value::from(file.as_str()));
            }
        }
        self.set_member(fields::TOUCHED_DIRS, dir, Some(Value::Array(list)));
    }

    /// Forget every searched directory (`touchedDirs` made empty).
    pub fn clear_touched_dirs(&mut self) {
        self.clear_object(fields::TOUCHED_DIRS);
    }

    /// Add `path` to the checklists found, once.
    pub fn add_checklist(&mut self, path: &str) {
        self.push_unique(fields::DISCOVERED_CHECKLISTS, path);
    }

    /// Discovery found something new: no read since.
    pub fn reset_directive_reads(&mut self) {
        self.set(fields::DIRECTIVE_READS, Value::from(0));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::testing::state;

    #[test]
    fn a_searched_directory_is_written_as_the_format_says() {
        let mut s = state(json!({"touchedDirs": {"/p": ["CLAUDE.md"]}, "pid": 1}));
        s.record_touched("/p", &["/p/CLAUDE.md".to_owned(), "CLAUDE.md".to_owned()]);
        s.record_touched("/p/src", &[]);
        s.add_checklist("/p/CHECKLIST.md");
        s.add_checklist("/p/CHECKLIST.md");
        s.reset_directive_reads();
        assert_eq!(
            s.to_pretty(),
            "{\n  \"touchedDirs\": {\n    \"/p\": [\n      \"CLAUDE.md\",\n      \"/p/CLAUDE.md\"\n    ],\n    \"/p/src\": []\n  },\n  \"pid\": 1,\n  \"discoveredChecklists\": [\n    \"/p/CHECKLIST.md\"\n  ],\n  \"directiveReadsWithoutClearing\": 0\n}\n"
        );
        s.clear_touched_dirs();
        assert_eq!(s.get(fields::TOUCHED_DIRS), Some(&json!({})));
    }

    #[test]
    fn a_state_read_and_written_back_unchanged_is_the_text_it_was() {
        let text = "{\n  \"directiveReadsWithoutClearing\": 0,\n  \"touchedDirs\": {\n    \"/q\": [\n      \"/q/A.md\",\n      3\n    ],\n    \"/p\": []\n  }\n}\n";
        let mut s = State::parse(text).unwrap();
        s.record_touched("/q", &["/q/A.md".to_owned()]);
        s.record_touched("/p", &[]);
        s.reset_directive_reads();
        assert!(!s.changed());
        assert_eq!(s.to_pretty(), text);
    }

    #[test]
    fn entries_in_other_shapes_name_no_file() {
        let mut s = state(json!({"touchedDirs": {"/a": "x", "/b": ["/b/A.md", 1]}}));
        assert!(s.is_touched("/a") && s.is_touched("/b") && !s.is_touched("/c"));
        assert_eq!(
            s.touched_dirs(),
            [
                ("/a".to_owned(), vec![]),
                ("/b".to_owned(), vec!["/b/A.md".to_owned()])
            ]
        );
        assert_eq!(s.touched_files(), ["/b/A.md"]);
        s.record_touched("/a", &["/a/B.md".to_owned()]);
        assert_eq!(s.touched_files(), ["/a/B.md", "/b/A.md"]);
        assert!(state(json!({"touchedDirs": []})).touched_dirs().is_empty());
    }
}
