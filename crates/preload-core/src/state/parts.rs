//! The progress of files going out in parts, typed: how many parts of each file are out
//! (`preloadParts`, [`fields::PRELOAD_PARTS`]), into how many parts it was cut then
//! (`preloadPartsCut`, [`fields::PRELOAD_PARTS_CUT`]), the main agent's and each sub-agent's
//! own, and which later parts the main agent's window holds without the earlier ones
//! (`preloadPartsHeld`, [`fields::PRELOAD_PARTS_HELD`]).
//!
//! Each is an object by path. An entry in a shape its type does not take reads as absent (a
//! field that is not an object holds none), and a file's entry is removed with the field when
//! it was the last.

use serde_json::Value;

use super::{Audience, State, fields};

/// Into how many parts a file was cut when its parts began to go out, and whether they go out
/// marked updated: `n`, or `[n, true]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartsCut {
    /// How many parts.
    pub parts: u64,
    /// Whether they go out marked `(updated)`.
    pub updated: bool,
}

impl PartsCut {
    /// A stored cut (`[n]` and `[n, false]` read as `n`).
    fn read(value: &Value) -> Option<Self> {
        let (n, updated) = match value {
            Value::Array(pair) => (pair.first()?, pair.get(1) == Some(&Value::Bool(true))),
            n => (n, false),
        };
        Some(Self {
            parts: n.as_u64()?,
            updated,
        })
    }

    /// As it is stored.
    fn stored(self) -> Value {
        if self.updated {
            Value::from(vec![Value::from(self.parts), Value::Bool(true)])
        } else {
            Value::from(self.parts)
        }
    }
}

/// A run of parts as `preloadPartsHeld` and a call's held parts store it: `[a, b, n]`, parts
/// `a` to `b` of `n` (members after those three are passed over).
pub(super) fn part_run(value: &Value) -> Option<[u64; 3]> {
    let run = value.as_array()?;
    Some([
        run.first()?.as_u64()?,
        run.get(1)?.as_u64()?,
        run.get(2)?.as_u64()?,
    ])
}

/// A run of parts as it is stored.
pub(super) fn stored_run(run: [u64; 3]) -> Value {
    Value::from(run.to_vec())
}

impl State {
    /// How many parts of `path` are out to `who`'s window.
    pub fn parts_done(&self, who: Audience<'_>, path: &str) -> Option<u64> {
        self.member(&who.key(fields::PRELOAD_PARTS), path)?.as_u64()
    }

    /// The files going out in parts to `who`'s window, in order (a file whose entry reads as
    /// no progress too: it goes out again from its first part).
    pub fn files_in_parts(&self, who: Audience<'_>) -> Vec<String> {
        match self.get(&who.key(fields::PRELOAD_PARTS)) {
            Some(Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// Note that `done` parts of `path` are out to `who`'s window, or (`None`) forget it.
    pub fn set_parts_done(&mut self, who: Audience<'_>, path: &str, done: Option<u64>) {
        self.set_member(&who.key(fields::PRELOAD_PARTS), path, done.map(Value::from));
    }

    /// Into how many parts `who`'s file `path` was cut when its parts began to go out.
    pub fn parts_cut(&self, who: Audience<'_>, path: &str) -> Option<PartsCut> {
        PartsCut::read(self.member(&who.key(fields::PRELOAD_PARTS_CUT), path)?)
    }

    /// Note (or forget) the cut `who`'s file `path` goes out in.
    pub fn set_parts_cut(&mut self, who: Audience<'_>, path: &str, cut: Option<PartsCut>) {
        let key = who.key(fields::PRELOAD_PARTS_CUT);
        self.set_member(&key, path, cut.map(PartsCut::stored));
    }

    /// The parts `[a, b, n]` of `path` the main agent's window holds without the earlier ones.
    pub fn parts_held(&self, path: &str) -> Option<[u64; 3]> {
        part_run(self.member(fields::PRELOAD_PARTS_HELD, path)?)
    }

    /// Note (or forget) the parts of `path` the main agent's window holds.
    pub fn set_parts_held(&mut self, path: &str, run: Option<[u64; 3]>) {
        self.set_member(fields::PRELOAD_PARTS_HELD, path, run.map(stored_run));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::testing::state;

    const SUB: Audience<'static> = Audience::SubAgent("a1");

    #[test]
    fn progress_is_written_in_the_shapes_of_the_format() {
        let mut s = state(json!({"pid": 1}));
        s.set_parts_done(Audience::Main, "/a", Some(2));
        let marked = PartsCut {
            parts: 4,
            updated: true,
        };
        s.set_parts_cut(Audience::Main, "/a", Some(marked));
        s.set_parts_cut(
            SUB,
            "/b",
            Some(PartsCut {
                parts: 3,
                updated: false,
            }),
        );
        s.set_parts_held("/c", Some([2, 3, 5]));
        assert_eq!(
            s.to_pretty(),
            "{\n  \"pid\": 1,\n  \"preloadParts\": {\n    \"/a\": 2\n  },\n  \"preloadPartsCut\": {\n    \"/a\": [\n      4,\n      true\n    ]\n  },\n  \"preloadPartsCut_sub:a1\": {\n    \"/b\": 3\n  },\n  \"preloadPartsHeld\": {\n    \"/c\": [\n      2,\n      3,\n      5\n    ]\n  }\n}\n"
        );
        assert_eq!(s.parts_done(Audience::Main, "/a"), Some(2));
        assert_eq!(s.parts_done(SUB, "/a"), None);
        assert_eq!(s.parts_cut(Audience::Main, "/a"), Some(marked));
        assert_eq!(s.parts_held("/c"), Some([2, 3, 5]));
    }

    #[test]
    fn a_state_read_and_written_back_unchanged_is_the_text_it_was() {
        let text = "{\n  \"preloadPartsCut\": {\n    \"/b\": [\n      3\n    ],\n    \"/a\": 4\n  },\n  \"preloadParts\": {\n    \"/b\": 1,\n    \"/a\": 2\n  },\n  \"pid\": 1\n}\n";
        let mut s = State::parse(text).unwrap();
        s.set_parts_done(Audience::Main, "/a", Some(2));
        s.set_parts_done(Audience::Main, "/x", None);
        s.set_parts_held("/a", None);
        s.set_parts_cut(
            Audience::Main,
            "/a",
            Some(PartsCut {
                parts: 4,
                updated: false,
            }),
        );
        assert!(!s.changed());
        assert_eq!(s.to_pretty(), text);
        s.set_parts_done(Audience::Main, "/b", Some(2));
        assert!(
            s.to_pretty()
                .contains("\"preloadParts\": {\n    \"/b\": 2,\n    \"/a\": 2\n  },\n  \"pid\""),
            "changed in its place"
        );
    }

    #[test]
    fn entries_in_other_shapes_read_as_absent_and_the_last_takes_its_field_along() {
        let mut s = state(json!({
            "preloadParts": {"/a": "2", "/b": 1},
            "preloadPartsCut": {"/a": [3, "yes"], "/b": true},
            "preloadPartsHeld": {"/a": [2, 3], "/b": [2, 3, 4, 9]},
            "preloadParts_sub:a1": [1]
        }));
        assert_eq!(s.parts_done(Audience::Main, "/a"), None);
        assert_eq!(s.files_in_parts(Audience::Main), ["/a", "/b"]);
        assert!(s.files_in_parts(SUB).is_empty());
        assert_eq!(
            s.parts_cut(Audience::Main, "/a"),
            Some(PartsCut {
                parts: 3,
                updated: false
            })
        );
        assert_eq!(s.parts_cut(Audience::Main, "/b"), None);
        assert_eq!(s.parts_held("/a"), None);
        assert_eq!(s.parts_held("/b"), Some([2, 3, 4]));
        s.set_parts_done(Audience::Main, "/a", None);
        s.set_parts_done(Audience::Main, "/b", None);
        assert!(s.get(fields::PRELOAD_PARTS).is_none());
        s.set_parts_done(SUB, "/c", Some(1));
        assert_eq!(s.get("preloadParts_sub:a1"), Some(&json!({"/c": 1})));
    }
}
