//! A state split in two, and a field moved to the front: how a seed view becomes the seed the
//! engine reads and the carry this product keeps beside it.

use serde_json::{Map, Value};

use super::{State, untyped};

impl State {
    /// The fields `first` takes and the others, each a state of its own in their order.
    pub fn partition(&self, first: impl Fn(&str) -> bool) -> (Self, Self) {
        let (taken, rest): (Map<String, Value>, _) =
            self.to_map().into_iter().partition(|(key, _)| first(key));
        (Self::from_map(taken), Self::from_map(rest))
    }

    /// Make an untyped field the first one.
    pub fn insert_first(&mut self, key: &str, value: Value) {
        self.changed = true;
        self.map.shift_insert(0, untyped(key).to_owned(), value);
    }

    /// Copy `from`'s untyped field `key`, when it has one, to the front of this state.
    pub fn copy_first(&mut self, from: &Self, key: &str) {
        if let Some(value) = from.get(key) {
            self.insert_first(key, value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_keeps_each_sides_order_and_a_copied_field_goes_first() {
        let s = State::parse(r#"{"a": 1, "pid": 7, "b": [2], "c": "3"}"#).unwrap();
        let (taken, mut rest) = s.partition(|key| key == "a" || key == "c");
        assert_eq!(taken.to_pretty(), "{\n  \"a\": 1,\n  \"c\": \"3\"\n}\n");
        rest.copy_first(&taken, "c");
        rest.copy_first(&taken, "absent");
        assert_eq!(
            rest.keys().collect::<Vec<_>>(),
            ["c", "pid", "b"],
            "the copy goes first, an absent field is not made"
        );
    }
}
