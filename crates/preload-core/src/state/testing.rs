//! What the library's unit tests build a state from.

use serde_json::Value;

use super::State;

/// The state a JSON object reads as.
///
/// # Panics
///
/// When `value` is not an object: a test's state always is one.
pub fn state(value: Value) -> State {
    match value {
        Value::Object(map) => State::from_map(map),
        other => panic!("a test's state is an object, not {other}"),
    }
}
