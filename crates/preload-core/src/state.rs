//! Lossless load and save of `.state.json` and seed files, and the locked read-modify-write.
//!
//! Unknown fields and their order survive a rewrite; output is indented by 2 spaces like jq.
//! Writes go to a temporary file in the same directory (created exclusively, so a planted
//! symlink is never followed) and are renamed over the old file. A file that is not a JSON object
//! is reported as [`StateError::Corrupt`] and never written.

use std::io;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::primitives::file::WriteError;
use crate::primitives::lock::LockError;
use typed::{Kind, Typed};

mod activation;
mod arrays;
mod calls;
mod compare;
mod conversation;
mod counters;
pub mod dedup;
pub mod fields;
pub mod files;
mod handover;
mod injected;
mod lifecycle;
mod members;
mod modes;
mod parts;
mod peek;
pub mod phase;
pub mod phases;
mod pretty;
pub mod refs;
mod split;
pub mod stamps;
mod stash;
mod store;
#[cfg(test)]
pub(crate) mod testing;
mod touched;
mod typed;
pub use calls::{CallRecord, Records};
pub use counters::{CounterMirror, Entry, Keyed};
pub(crate) use counters::{lenient, lenient_strings};
pub use files::{Audience, IN_CONTEXT, Paths, QUEUED};
pub use handover::Handover;
pub use lifecycle::Lifecycle;
pub use modes::{SkillMode, modes_of};
pub use parts::PartsCut;
pub use peek::{peek_member, peek_pid};
pub use phase::Phase;
pub use phases::{PhaseDef, Phases};
pub use stash::StashEntry;
pub use store::{
    Durability, Read, Tried, Write, commit_before, create_if_absent, load, load_read, optimistic,
    save, save_fields, save_locked, update,
};
pub use typed::Field;

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

impl StateError {
    /// Whether nothing was written for want of time: the lock not had, or the call's budget
    /// spent before the write.
    pub fn is_late(&self) -> bool {
        matches!(self, Self::Lock(_) | Self::Late { .. })
    }
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

/// A state document: its fields in their order, the ones this product reads and writes typed
/// ([`Field`], see `typed`), and whether it was changed.
///
/// The mark is how a call tells that it changed the state, without a copy of it to compare
/// with (on a large state, thousands of paths copied and a hundred and fifty fresh pages). It
/// is conservative: a write of an equal value is no change, but every mutable borrow
/// ([`Self::value_mut`], [`Self::array_mut`], [`Self::object_mut`]) counts as one. So a state
/// marked unchanged is the one loaded, and a writer of a marked state still compares its text
/// before it writes.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Every field, in the document's order: an untyped one with its value, a typed one
    /// holding its place with `null`.
    map: Map<String, Value>,
    /// The typed fields.
    typed: Typed,
    changed: bool,
}

/// A key the untyped accessors are given: never a typed field's (a typed field is read and
/// changed through [`State::field`], [`State::set`], [`State::items`], [`State::array_mut`] and
/// the accessors of its type).
fn untyped(key: &str) -> &str {
    debug_assert!(
        Kind::of(key).is_none(),
        "`{key}` is a typed field: read it through its accessor"
    );
    key
}

impl State {
    /// The document of `map`, its typed fields typed, marked unchanged.
    pub fn from_map(mut map: Map<String, Value>) -> Self {
        let mut typed = Typed::default();
        for (key, value) in &mut map {
            if let Some(kind) = Kind::of(key) {
                if let Err(kept) = typed.take(key, kind, std::mem::take(value)) {
                    *value = kept;
                }
            }
        }
        Self {
            map,
            typed,
            changed: false,
        }
    }

    /// The untyped fields, in order, each typed field's place among them held by `null` (read
    /// those with [`Self::field`] or their own accessors).
    pub fn map(&self) -> &Map<String, Value> {
        &self.map
    }

    /// The document as a JSON object (a copy), the typed fields in their places.
    pub fn to_map(&self) -> Map<String, Value> {
        self.fields()
            .map(|(key, value)| (key.to_owned(), value.to_value()))
            .collect()
    }

    /// The names of the fields, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Whether the document has no field.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every field, in order, typed or not.
    pub fn fields(&self) -> impl ExactSizeIterator<Item = (&str, Field<'_>)> + Clone {
        self.map
            .iter()
            .map(|(key, value)| (key.as_str(), self.field_at(key, value)))
    }

    /// The field `key` holding `value` in the document.
    fn field_at<'s>(&'s self, key: &str, value: &'s Value) -> Field<'s> {
        value
            .is_null()
            .then(|| Kind::of(key))
            .flatten()
            .and_then(|kind| self.typed.get(key, kind))
            .unwrap_or(Field::Json(value))
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
        peek::parse_only(text, fields).map(Self::from_map)
    }

    /// [`Self::parse_fields`] of every top-level field but `skipped`: what else a record holds
    /// beside the fields about to be written again.
    pub fn parse_without(text: &str, skipped: &[&str]) -> Result<Self, ParseError> {
        peek::parse_where(text, |key| !skipped.contains(&key)).map(Self::from_map)
    }

    /// Serialise as jq does: 2-space indentation and a final newline.
    pub fn to_pretty(&self) -> String {
        let mut text = pretty::to_string_fields(self.fields(), 1);
        text.push('\n');
        text
    }

    /// The text [`Self::to_pretty`] writes for a state of `fields`, in order: a record of
    /// another state's fields, written without copying them.
    pub fn pretty_of(fields: &[(&str, Field<'_>)]) -> String {
        let mut text = pretty::to_string_fields(fields.iter().copied(), 1);
        text.push('\n');
        text
    }

    /// A field, typed or not.
    pub fn field(&self, key: &str) -> Option<Field<'_>> {
        let value = self.map.get(key)?;
        Some(self.field_at(key, value))
    }

    /// An untyped field (a typed one reads as absent here: read it with [`Self::field`]).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self.field(untyped(key))? {
            Field::Json(value) => Some(value),
            Field::Text(_) | Field::List(_) => None,
        }
    }

    /// A string field, typed or not.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.field(key)?.as_str()
    }

    /// A boolean field (`false` when absent or not a boolean).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.field(key), Some(Field::Json(Value::Bool(true))))
    }

    /// A numeric field (a number, or a string of one).
    pub fn number(&self, key: &str) -> Option<f64> {
        match self.field(key)? {
            Field::Json(Value::Number(n)) => n.as_f64(),
            text => text.as_str()?.trim().parse().ok(),
        }
    }

    /// A field holding a process ID (a positive whole number, or a string of one).
    pub fn pid(&self, key: &str) -> Option<u32> {
        match self.field(key)? {
            Field::Json(Value::Number(n)) => n.as_u64().and_then(|v| u32::try_from(v).ok()),
            text => text.as_str()?.trim().parse().ok(),
        }
        .filter(|pid| *pid > 0)
    }

    /// A field holding a whole number (a number without a fraction, or a string of one).
    pub fn count(&self, key: &str) -> Option<u64> {
        match self.field(key)? {
            Field::Json(Value::Number(n)) => n.as_u64(),
            text => text.as_str()?.trim().parse().ok(),
        }
    }

    /// Set a text field.
    pub fn set_text(&mut self, key: &str, text: &str) {
        self.set(key, Value::from(text));
    }

    /// Set a field holding a whole number.
    pub fn set_count(&mut self, key: &str, count: u64) {
        self.set(key, Value::from(count));
    }

    /// Set a field holding a list of texts.
    pub fn set_strings(&mut self, key: &str, texts: &[String]) {
        self.set(key, Value::from(texts));
    }

    /// Set a field, typed or not, keeping its position when it exists. The value it replaces
    /// is freed: its memory serves the call's next allocations (left to the process's exit
    /// instead, a SessionStart that empties the large state's `preloadedFiles` took 97 more
    /// page faults).
    pub fn set(&mut self, key: &str, value: Value) {
        if self.field(key).is_some_and(|old| old.is(&value)) {
            return;
        }
        self.changed = true;
        let place = match Kind::of(key) {
            None => value,
            Some(kind) => {
                // The value replaced may be thousands of paths (a window's files cleared at a
                // start).
                release(self.typed.remove(key, kind));
                match self.typed.take(key, kind, value) {
                    Ok(()) => Value::Null,
                    Err(kept) => kept,
                }
            }
        };
        release(self.map.insert(key.to_owned(), place));
    }

    /// An untyped field, to change in place: marks the state changed when it is there.
    pub fn value_mut(&mut self, key: &str) -> Option<&mut Value> {
        let value = self.map.get_mut(untyped(key));
        self.changed |= value.is_some();
        value
    }

    /// Remove a field, typed or not.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let removed = self.map.shift_remove(key)?;
        self.changed = true;
        Some(
            Kind::of(key)
                .and_then(|kind| self.typed.remove(key, kind))
                .unwrap_or(removed),
        )
    }

    /// Remove every field whose key `gone` holds for.
    pub fn remove_where(&mut self, gone: impl Fn(&str) -> bool) {
        let keys: Vec<String> = self.keys().filter(|k| gone(k)).map(str::to_owned).collect();
        for key in keys {
            self.remove(&key);
        }
    }

    /// Merge `from` into the document as jq's `*` does ([`deep_merge`]).
    pub fn merge(&mut self, from: &Map<String, Value>) {
        for (key, value) in from {
            if let (Some(Value::Object(old)), Value::Object(new)) = (self.map.get_mut(key), value) {
                self.changed = true;
                deep_merge(old, new);
                continue;
            }
            self.set(key, value.clone());
        }
    }
}

/// Free a value replaced or taken out (see [`State::set`]).
fn release(value: Option<Value>) {
    crate::primitives::system::entry::release(value);
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
