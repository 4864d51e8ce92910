//! The session's counters as the state holds them for the engine's readers, typed
//! ([`CounterMirror`]): `toolCallsByTranscript`, `toolCallsSinceLastLog`,
//! `primaryTranscriptKey`, `lastEditFile_<key>` and `preloadCountersSeq` (see
//! [`crate::mechanisms::counters`]).
//!
//! `session.sh` writes these fields too. A field, or a count, in a shape its type does not take
//! reads as absent, as the engine's hooks read it (a count that is not a number counts 0). A
//! write changes only what reads otherwise than what it writes: every other field, and a
//! counter that already reads as the value written (a count of `2.5` where 2 is written, a
//! field in a shape its type does not take where nothing is written), stays as it was, in its
//! place.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{State, fields, whole};

/// Entries by agent key (a transcript's name, `sub:<agent_id>`), in the order they were first
/// written, as a JSON object keeps them. Read from an object, an entry that does not read as a
/// `V` ([`Entry`]) is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyed<V>(Vec<(String, V)>);

impl<V> Default for Keyed<V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<V> Keyed<V> {
    /// The entry of `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Set the entry of `key`: in its place when there is one, else after the others.
    pub fn insert(&mut self, key: &str, value: V) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    /// Remove the entry of `key`.
    pub fn remove(&mut self, key: &str) {
        self.0.retain(|(k, _)| k != key);
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// What an entry of a [`Keyed`] holds, and what of JSON reads as one.
pub trait Entry: Sized {
    /// What an entry is read as.
    type Read: DeserializeOwned;
    /// The entry of what was read.
    fn of(read: Self::Read) -> Self;
}

/// A count: any number, as a whole count ([`whole`]).
impl Entry for u64 {
    type Read = f64;
    fn of(read: f64) -> Self {
        whole(read)
    }
}

/// A file's path: a string.
impl Entry for String {
    type Read = String;
    fn of(read: String) -> Self {
        read
    }
}

/// An object, its entries in order.
impl<V: Serialize> Serialize for Keyed<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// An object; an entry that does not read as a `V` is left out.
impl<'de, V: Entry> Deserialize<'de> for Keyed<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<V>(PhantomData<V>);
        impl<'de, V: Entry> Visitor<'de> for Entries<V> {
            type Value = Keyed<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Keyed<V>, A::Error> {
                let mut keyed = Keyed::default();
                while let Some((key, read)) = map.next_entry::<String, Lenient<V::Read>>()? {
                    if let Some(read) = read.ok() {
                        keyed.insert(&key, V::of(read));
                    }
                }
                Ok(keyed)
            }
        }
        deserializer.deserialize_map(Entries(PhantomData))
    }
}

/// A value read as a `T` when it is one.
#[derive(Deserialize)]
#[serde(untagged)]
enum Lenient<T> {
    Is(T),
    Not(IgnoredAny),
}

impl<T> Lenient<T> {
    fn ok(self) -> Option<T> {
        match self {
            Self::Is(value) => Some(value),
            Self::Not(_) => None,
        }
    }
}

/// A member read as a `T`, or `T`'s default when it is not one: a member in a shape its type
/// does not take reads as absent, and the rest of what holds it still reads.
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Lenient::deserialize(deserializer)?.ok().unwrap_or_default())
}

/// A member read as a list of strings: its entries that are strings, none when it is not an
/// array.
pub(crate) fn lenient_strings<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    let items: Vec<Lenient<String>> = lenient(deserializer)?;
    Ok(items.into_iter().filter_map(Lenient::ok).collect())
}

/// The counters as a state holds them (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterMirror {
    /// [`fields::TOOL_CALLS_BY_TRANSCRIPT`]: each agent's count.
    pub counts: Keyed<u64>,
    /// [`fields::TOOL_CALLS_SINCE_LAST_LOG`]: the main agent's count, as the engine displays
    /// it (a number, or a string of one).
    pub since_last_log: Option<u64>,
    /// [`fields::PRIMARY_TRANSCRIPT_KEY`]: the main agent's first key.
    pub primary: Option<String>,
    /// `lastEditFile_<key>` ([`fields::LAST_EDIT_FILE_PREFIX`]): the file each agent's last
    /// Edit touched.
    pub last_edit: Keyed<String>,
    /// [`fields::COUNTERS_SEQ`]: the sequence number the counters were written at.
    pub seq: Option<u64>,
}

/// The field of the last edit of `key`.
fn last_edit_field(key: &str) -> String {
    format!("{}{key}", fields::LAST_EDIT_FILE_PREFIX)
}

impl State {
    /// The tool calls of agent `key` as `toolCallsByTranscript` counts them, read as the
    /// engine's rules read them: a number, or a string of one, as a whole count; 0 otherwise.
    pub fn calls_of(&self, key: &str) -> u64 {
        let count = match self.member(fields::TOOL_CALLS_BY_TRANSCRIPT, key) {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        count.map_or(0, whole)
    }

    /// The counters this state holds.
    pub fn counter_mirror(&self) -> CounterMirror {
        CounterMirror {
            counts: self
                .get(fields::TOOL_CALLS_BY_TRANSCRIPT)
                .and_then(|by| Keyed::deserialize(by).ok())
                .unwrap_or_default(),
            since_last_log: self.number(fields::TOOL_CALLS_SINCE_LAST_LOG).map(whole),
            primary: self.str(fields::PRIMARY_TRANSCRIPT_KEY).map(str::to_owned),
            last_edit: Keyed(
                self.map
                    .iter()
                    .filter_map(|(k, v)| {
                        let key = k.strip_prefix(fields::LAST_EDIT_FILE_PREFIX)?;
                        Some((key.to_owned(), v.as_str()?.to_owned()))
                    })
                    .collect(),
            ),
            seq: self.get(fields::COUNTERS_SEQ).and_then(Value::as_u64),
        }
    }

    /// Write `mirror`'s counters into the state, in this order: every count (into
    /// [`fields::TOOL_CALLS_BY_TRANSCRIPT`], made an object when it is not one; another
    /// agent's count stays), the since-last-log count, the primary key and the sequence number
    /// when `mirror` has them (else they stay as they are), then the last edits (one `mirror`
    /// has not is removed). Only what reads otherwise is written (see the module's
    /// documentation). True when that changed the state.
    pub fn set_counter_mirror(&mut self, mirror: &CounterMirror) -> bool {
        let now = self.counter_mirror();
        let mut changed = false;
        let stale: Vec<(&str, u64)> = mirror
            .counts
            .iter()
            .filter(|(key, n)| now.counts.get(key) != Some(n))
            .map(|(key, n)| (key, *n))
            .collect();
        let is_object = matches!(
            self.get(fields::TOOL_CALLS_BY_TRANSCRIPT),
            Some(Value::Object(_))
        );
        if !is_object || !stale.is_empty() {
            let by = self.object_mut(fields::TOOL_CALLS_BY_TRANSCRIPT);
            for (key, n) in stale {
                by.insert(key.to_owned(), Value::from(n));
            }
            changed = true;
        }
        if let Some(n) = mirror
            .since_last_log
            .filter(|n| now.since_last_log != Some(*n))
        {
            self.set(fields::TOOL_CALLS_SINCE_LAST_LOG, Value::from(n));
            changed = true;
        }
        if let Some(primary) = mirror.primary.as_deref() {
            if now.primary.as_deref() != Some(primary) {
                self.set(fields::PRIMARY_TRANSCRIPT_KEY, Value::from(primary));
                changed = true;
            }
        }
        if let Some(seq) = mirror.seq.filter(|seq| now.seq != Some(*seq)) {
            self.set(fields::COUNTERS_SEQ, Value::from(seq));
            changed = true;
        }
        for (key, _) in now.last_edit.iter() {
            if mirror.last_edit.get(key).is_none() {
                self.remove(&last_edit_field(key));
                changed = true;
            }
        }
        for (key, file) in mirror.last_edit.iter() {
            if now.last_edit.get(key) != Some(file) {
                self.set(&last_edit_field(key), Value::from(file.as_str()));
                changed = true;
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(text: &str) -> State {
        State::parse(text).unwrap()
    }

    fn keyed<V: Clone>(entries: &[(&str, V)]) -> Keyed<V> {
        let mut keyed = Keyed::default();
        for (key, value) in entries {
            keyed.insert(key, value.clone());
        }
        keyed
    }

    #[test]
    fn a_rule_counts_an_agents_calls_from_a_number_or_a_string_of_one() {
        let s = state(
            r#"{"toolCallsByTranscript": {"a": 3, "b": " 7 ", "c": 2.5, "d": -1, "e": true}}"#,
        );
        let counts: Vec<u64> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|key| s.calls_of(key))
            .collect();
        assert_eq!(counts, [3, 7, 2, 0, 0, 0]);
        assert_eq!(state(r#"{"toolCallsByTranscript": [3]}"#).calls_of("0"), 0);
    }

    #[test]
    fn a_field_in_a_shape_its_type_does_not_take_reads_as_absent() {
        let s = state(
            r#"{"toolCallsByTranscript": {"b": 2.5, "x": "7", "a": 3, "n": -1, "z": null},
                "toolCallsSinceLastLog": "4", "primaryTranscriptKey": 5,
                "lastEditFile_a": "/a", "lastEditFile_b": 5, "preloadCountersSeq": "6"}"#,
        );
        assert_eq!(
            s.counter_mirror(),
            CounterMirror {
                counts: keyed(&[("b", 2), ("a", 3), ("n", 0)]),
                since_last_log: Some(4),
                primary: None,
                last_edit: keyed(&[("a", "/a".to_owned())]),
                seq: None,
            }
        );
        let odd = state(r#"{"toolCallsByTranscript": [1], "toolCallsSinceLastLog": true}"#);
        assert_eq!(odd.counter_mirror(), CounterMirror::default());
    }

    #[test]
    fn a_mirror_that_reads_as_the_state_leaves_it_as_it_was() {
        let text = r#"{"toolCallsByTranscript": {"b": 2.5, "x": "7"}, "toolCallsSinceLastLog": "4",
            "lastEditFile_j": 5, "other": [1], "preloadCountersSeq": 3}"#;
        let mut s = state(text);
        let mirror = s.counter_mirror();
        assert!(!s.set_counter_mirror(&mirror));
        assert!(!s.changed(), "nothing was written");
        assert_eq!(s.to_pretty(), state(text).to_pretty());
        // A count written where the state holds one in another shape replaces it, in its place.
        let mut counted = mirror.clone();
        counted.counts.insert("x", 1);
        assert!(s.set_counter_mirror(&counted));
        assert_eq!(
            s.get(fields::TOOL_CALLS_BY_TRANSCRIPT),
            Some(&serde_json::json!({"b": 2.5, "x": 1}))
        );
        assert_eq!(s.get("lastEditFile_j"), Some(&serde_json::json!(5)));
    }

    #[test]
    fn a_mirror_writes_the_counters_in_their_places() {
        let mut s = state(
            r#"{"toolCallsByTranscript": "gone", "lastEditFile_a": "/a", "lastEditFile_b": "/b",
                "preloadCountersSeq": 1, "tail": 1}"#,
        );
        let mirror = CounterMirror {
            counts: keyed(&[("m", 2), ("sub:s", 1)]),
            since_last_log: Some(2),
            primary: Some("m".to_owned()),
            last_edit: keyed(&[("b", "/c".to_owned()), ("m", "/m".to_owned())]),
            seq: Some(4),
        };
        assert!(s.set_counter_mirror(&mirror));
        assert_eq!(s.counter_mirror(), mirror);
        let keys: Vec<&str> = s.keys().collect();
        assert_eq!(
            keys,
            [
                "toolCallsByTranscript",
                "lastEditFile_b",
                "preloadCountersSeq",
                "tail",
                "toolCallsSinceLastLog",
                "primaryTranscriptKey",
                "lastEditFile_m"
            ]
        );
        // What a mirror does not have stays as it is.
        let kept = CounterMirror {
            last_edit: mirror.last_edit.clone(),
            ..CounterMirror::default()
        };
        assert!(!s.set_counter_mirror(&kept));
        assert_eq!(s.counter_mirror(), mirror);
    }

    #[test]
    fn keyed_entries_keep_their_order() {
        let mut counts = keyed(&[("b", 1_u64), ("a", 2)]);
        counts.insert("b", 3);
        counts.insert("c", 0);
        counts.remove("a");
        let text = serde_json::to_string(&counts).unwrap();
        assert_eq!(text, r#"{"b":3,"c":0}"#);
        let read: Keyed<u64> = serde_json::from_str(r#"{"b": 3, "x": [], "c": 0.5}"#).unwrap();
        assert_eq!(read, counts);
        assert!(serde_json::from_str::<Keyed<String>>("[]").is_err());
    }
}
