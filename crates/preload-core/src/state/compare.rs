//! When two states are the same: as the JSON objects they are, key order aside, with strings
//! compared a word at a time ([`bytes::same`]).

use serde_json::{Map, Value};

use super::State;
use crate::primitives::bytes;

/// Equal as JSON objects are (key order aside, the mark aside), with strings compared a word at
/// a time ([`bytes::same`]).
impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        same_object(&self.map, &other.map) && self.typed == other.typed
    }
}

/// Whether `value` is the string `text` (compared as [`bytes::same`] does: a list of thousands
/// of paths is searched on every delivery).
pub(super) fn is_text(value: &Value, text: &str) -> bool {
    value
        .as_str()
        .is_some_and(|s| bytes::same(s.as_bytes(), text.as_bytes()))
}

/// Equal as JSON values.
pub(super) fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => bytes::same(x.as_bytes(), y.as_bytes()),
        (Value::Array(x), Value::Array(y)) => same_items(x, y),
        (Value::Object(x), Value::Object(y)) => same_object(x, y),
        _ => a == b,
    }
}

/// Two lists equal item by item.
pub(super) fn same_items(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}

/// Key by key in order while both orders agree, by key lookup once they part.
pub(super) fn same_object(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
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
