//! The array and object fields of a state, typed or not: read, created, searched and changed
//! in place.

use serde_json::{Map, Value};

use super::compare::is_text;
use super::typed::{Field, Kind};
use super::{State, untyped};

impl State {
    /// The items of an array field, typed or not (none when absent or not an array).
    pub fn items(&self, key: &str) -> &[Value] {
        self.field(key).and_then(Field::as_array).unwrap_or(&[])
    }

    /// The strings of an array field (other entries are skipped).
    pub fn strings(&self, key: &str) -> Vec<String> {
        self.items(key)
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    }

    /// The array field `key`, typed or not, created (empty) when absent or not an array.
    pub fn array_mut(&mut self, key: &str) -> &mut Vec<Value> {
        self.changed = true;
        if let Some(kind) = Kind::of(key).filter(|kind| kind.is_array()) {
            if self.typed.get(key, kind).is_none() {
                self.map.insert(key.to_owned(), Value::Null);
                let _ = self.typed.take(key, kind, Value::Array(Vec::new()));
            }
            return match self.typed.array_mut(key, kind) {
                Some(items) => items,
                None => unreachable!("just made a list"),
            };
        }
        let slot = self
            .map
            .entry(untyped(key).to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            *slot = Value::Array(Vec::new());
        }
        match slot {
            Value::Array(items) => items,
            _ => unreachable!("just made an array"),
        }
    }

    /// The untyped object field `key`, created (empty) when absent or not an object.
    pub fn object_mut(&mut self, key: &str) -> &mut Map<String, Value> {
        self.changed = true;
        let slot = self
            .map
            .entry(untyped(key).to_owned())
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
        self.items(key).iter().any(|v| is_text(v, item))
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
        self.array_mut(key).retain(|v| !is_text(v, item));
        true
    }
}
