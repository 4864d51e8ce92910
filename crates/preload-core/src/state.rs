//! Lossless load and save of `.state.json` and seed files, and the locked read-modify-write.
//!
//! Unknown fields and their order survive a rewrite; output is indented by 2 spaces like jq.
//! Writes go to a temporary file in the same directory (created exclusively, so a planted
//! symlink is never followed) and are renamed over the old file. A file that is not a JSON object
//! is reported as [`StateError::Corrupt`] and never written.

use std::io;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::primitives::bytes;
use crate::primitives::file::WriteError;
use crate::primitives::lock::LockError;

mod conversation;
pub mod dedup;
pub mod fields;
pub mod files;
mod lifecycle;
mod peek;
pub mod phase;
pub mod phases;
mod pretty;
pub mod refs;
pub mod stamps;
mod store;
pub use files::{Audience, IN_CONTEXT, Paths, QUEUED};
pub use lifecycle::Lifecycle;
pub use peek::{peek_member, peek_pid};
pub use phase::Phase;
pub use phases::{PhaseDef, Phases};
pub use store::{
    Durability, Read, commit_before, create_if_absent, load, load_read, rewrite, save, save_fields,
    save_locked, update, update_read,
};

/// Largest state file the hooks will read (a larger one is treated as corrupt).
pub const MAX_STATE_BYTES: u64 = 16 * 1024 * 1024;

/// Errors of loading and saving state files.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The file does not exist.
    #[error("state file {path} does not exist")]
    Missing {
        /// The state file.
        path: PathBuf,
    },
    /// The file exists but is not a JSON object; it is left untouched.
    #[error(
        "state file {path} is not a JSON object ({reason}); left untouched, see `preload doctor`"
    )]
    Corrupt {
        /// The state file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("cannot {action} state file {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The state file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// An atomic write failed; the file is as it was.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The lock could not be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The call's time budget ran out before the write; nothing was written.
    #[error("not writing state file {path}: the call's time budget ran out first")]
    Late {
        /// The state file.
        path: PathBuf,
    },
}

/// Why a text is not a state document.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Not JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// JSON, but its top level is not an object.
    #[error("top level is {0}")]
    NotAnObject(&'static str),
}

/// A state document: a JSON object whose key order is kept, and whether it was changed.
///
/// The mark is how a call tells that it changed the state, without a copy of it to compare
/// with (on a large state, thousands of paths copied and a hundred and fifty fresh pages). It
/// is conservative: a write of an equal value is no change, but every mutable borrow
/// ([`Self::map_mut`], [`Self::array_mut`], [`Self::object_mut`]) counts as one. So a state
/// marked unchanged is the one loaded, and a writer of a marked state still compares its text
/// before it writes.
#[derive(Debug, Clone, Default)]
pub struct State {
    map: Map<String, Value>,
    changed: bool,
}

/// Equal as JSON objects are (key order aside, the mark aside), with strings compared a word at
/// a time ([`bytes::same`]).
impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        same_object(&self.map, &other.map)
    }
}

/// Whether `value` is the string `text` (compared as [`bytes::same`] does: a list of thousands
/// of paths is searched on every delivery).
fn is_text(value: &Value, text: &str) -> bool {
    value
        .as_str()
        .is_some_and(|s| bytes::same(s.as_bytes(), text.as_bytes()))
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => bytes::same(x.as_bytes(), y.as_bytes()),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        (Value::Object(x), Value::Object(y)) => same_object(x, y),
        _ => a == b,
    }
}

/// Key by key in order while both orders agree, by key lookup once they part.
fn same_object(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    if a.len() != b.len() {
        return false;
    }
    for ((key_a, a_value), (key_b, b_value)) in a.iter().zip(b) {
        if !bytes::same(key_a.as_bytes(), key_b.as_bytes()) {
            return a
                .iter()
                .all(|(key, value)| b.get(key).is_some_and(|other| same_value(value, other)));
        }
        if !same_value(a_value, b_value) {
            return false;
        }
    }
    true
}

impl State {
    /// The document `map`, marked unchanged.
    pub fn from_map(map: Map<String, Value>) -> Self {
        Self {
            map,
            changed: false,
        }
    }

    /// The document's fields.
    pub fn map(&self) -> &Map<String, Value> {
        &self.map
    }

    /// The document's fields, to change: marks the state changed.
    pub fn map_mut(&mut self) -> &mut Map<String, Value> {
        self.changed = true;
        &mut self.map
    }

    /// The document's fields, taken.
    pub fn into_map(self) -> Map<String, Value> {
        self.map
    }

    /// Whether the state may have changed since it was loaded or [`Self::mark_unchanged`]
    /// (never false when it did).
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// Start telling changes from here.
    pub fn mark_unchanged(&mut self) {
        self.changed = false;
    }

    /// Parse a document; anything but an object is an error.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        match serde_json::from_str::<Value>(text)? {
            Value::Object(map) => Ok(Self::from_map(map)),
            other => Err(ParseError::NotAnObject(kind_of(&other))),
        }
    }

    /// Parse a document as [`State::parse`] does but keep only the top-level `fields`: the
    /// rest is checked and skipped without being built, so a quick look at a large state
    /// (whose `pid` is it?) costs a fraction of a full parse.
    pub fn parse_fields(text: &str, fields: &[&str]) -> Result<Self, ParseError> {
        struct Only<'a>(&'a [&'a str]);
        impl<'de> serde::de::Visitor<'de> for Only<'_> {
            type Value = Map<String, Value>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut kept = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    if self.0.contains(&key.as_str()) {
                        kept.insert(key, map.next_value::<Value>()?);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(kept)
            }
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let kept = serde::Deserializer::deserialize_map(&mut de, Only(fields))
            .and_then(|kept| de.end().map(|()| kept))?;
        Ok(Self::from_map(kept))
    }

    /// Serialise as jq does: 2-space indentation and a final newline.
    pub fn to_pretty(&self) -> String {
        let mut text = pretty::to_string_map(&self.map, 1);
        text.push('\n');
        text
    }

    /// The text [`Self::to_pretty`] writes for a state of `fields`, in order: a record of
    /// another state's fields, written without copying them.
    pub fn pretty_of(fields: &[(&str, &Value)]) -> String {
        let mut text = pretty::to_string_entries(fields, 1);
        text.push('\n');
        text
    }

    /// A field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key)
    }

    /// A string field.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.map.get(key).and_then(Value::as_str)
    }

    /// A boolean field (`false` when absent or not a boolean).
    pub fn flag(&self, key: &str) -> bool {
        self.map.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// A numeric field.
    pub fn number(&self, key: &str) -> Option<f64> {
        match self.map.get(key)? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A field holding a process ID (a positive whole number, or a string of one).
    pub fn pid(&self, key: &str) -> Option<u32> {
        match self.map.get(key)? {
            Value::Number(n) => n.as_u64().and_then(|v| u32::try_from(v).ok()),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|pid| *pid > 0)
    }

    /// The strings of an array field (other entries are skipped).
    pub fn strings(&self, key: &str) -> Vec<String> {
        strings_of(self.map.get(key))
    }

    /// Set a field, keeping its position when it exists. The value it replaces is freed: its
    /// memory serves the call's next allocations (left to the process's exit instead, a
    /// SessionStart that empties the large state's `preloadedFiles` took 97 more page faults).
    pub fn set(&mut self, key: &str, value: Value) {
        if self.map.get(key).is_some_and(|old| same_value(old, &value)) {
            return;
        }
        self.changed = true;
        // The value replaced may be thousands of paths (a window's files cleared at a start).
        crate::primitives::system::entry::release(self.map.insert(key.to_owned(), value));
    }

    /// A field, to change in place: marks the state changed when it is there.
    pub fn value_mut(&mut self, key: &str) -> Option<&mut Value> {
        let value = self.map.get_mut(key);
        self.changed |= value.is_some();
        value
    }

    /// Remove a field.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let removed = self.map.shift_remove(key);
        self.changed |= removed.is_some();
        removed
    }

    /// The array field `key`, created (empty) when absent or not an array.
    pub fn array_mut(&mut self, key: &str) -> &mut Vec<Value> {
        let slot = self
            .map_mut()
            .entry(key.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            *slot = Value::Array(Vec::new());
        }
        match slot {
            Value::Array(items) => items,
            _ => unreachable!("just made an array"),
        }
    }

    /// The object field `key`, created (empty) when absent or not an object.
    pub fn object_mut(&mut self, key: &str) -> &mut Map<String, Value> {
        let slot = self
            .map_mut()
            .entry(key.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        match slot {
            Value::Object(map) => map,
            _ => unreachable!("just made an object"),
        }
    }

    /// Whether the array field `key` holds the string `item`.
    pub(crate) fn holds_text(&self, key: &str, item: &str) -> bool {
        match self.map.get(key) {
            Some(Value::Array(items)) => items.iter().any(|v| is_text(v, item)),
            _ => false,
        }
    }

    /// Append `item` to the string array `key` unless it is already there; true when added.
    pub fn push_unique(&mut self, key: &str, item: &str) -> bool {
        let present = self.holds_text(key, item);
        if !present {
            self.array_mut(key).push(Value::String(item.to_owned()));
        }
        !present
    }

    /// Remove every occurrence of `item` from the string array `key`; true when any was removed.
    pub fn remove_item(&mut self, key: &str, item: &str) -> bool {
        if !self.holds_text(key, item) {
            return false;
        }
        if let Some(Value::Array(items)) = self.value_mut(key) {
            items.retain(|v| !is_text(v, item));
        }
        true
    }
}

/// jq's `*`: objects merged member by member, depth first; anything else is replaced.
pub fn deep_merge(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (key, value) in from {
        match (into.get_mut(key), value) {
            (Some(Value::Object(old)), Value::Object(new)) => deep_merge(old, new),
            _ => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The strings of a JSON array (other entries skipped); empty for anything but an array.
pub fn strings_of(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// What a JSON value is, in words ("an array"), for errors about a file that is not an object.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON number as a whole count: negative and non-finite values are 0, fractions cut,
/// values past `u64::MAX` saturate.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn whole(n: f64) -> u64 {
    if n.is_finite() && n > 0.0 {
        n as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests;
