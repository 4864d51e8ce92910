//! The object fields of a state read and changed one member at a time: the records by path
//! (part progress, `touchedDirs`) and by rule (`injectedRules`). A field that is not an object
//! holds no member.

use serde_json::{Map, Value};

use super::State;

impl State {
    /// The member `name` of the object field `key`.
    pub(super) fn member(&self, key: &str, name: &str) -> Option<&Value> {
        match self.get(key)? {
            Value::Object(map) => map.get(name),
            _ => None,
        }
    }

    /// The members of the object field `key`, in order (none when it is not an object).
    pub(super) fn members(&self, key: &str) -> impl Iterator<Item = (&String, &Value)> {
        match self.get(key) {
            Some(Value::Object(map)) => Some(map.iter()),
            _ => None,
        }
        .into_iter()
        .flatten()
    }

    /// Set the member `name` of the object field `key` (the field made, or replacing one that
    /// is not an object, when it has none), or (`None`) remove it, and the field when it was
    /// the last; a member already holding `value` is left as it is.
    pub(super) fn set_member(&mut self, key: &str, name: &str, value: Option<Value>) {
        let old = self.member(key, name);
        match value {
            Some(value) if old != Some(&value) => {
                self.object_mut(key).insert(name.to_owned(), value);
            }
            None if old.is_some() => {
                let now_empty = match self.value_mut(key) {
                    Some(Value::Object(map)) => {
                        map.shift_remove(name);
                        map.is_empty()
                    }
                    _ => false,
                };
                if now_empty {
                    self.remove(key);
                }
            }
            _ => {}
        }
    }

    /// Set the members of `from`'s object field `key` in this state's, as they are written
    /// there (the field made when it has none): a context window's record taken over.
    pub fn merge_members(&mut self, key: &str, from: &State) {
        if let Some(Value::Object(members)) = from.get(key) {
            let target: &mut Map<String, Value> = self.object_mut(key);
            for (name, value) in members {
                target.insert(name.clone(), value.clone());
            }
        }
    }

    /// Make the object field `key` empty (made when the state has none).
    pub(super) fn clear_object(&mut self, key: &str) {
        self.set(key, Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::state::fields;
    use crate::state::testing::state;

    #[test]
    fn a_windows_members_are_merged_as_written() {
        let mut s = state(json!({"preloadParts": {"/a": 1, "/b": 2}}));
        let from = state(json!({"preloadParts": {"/b": 3, "/c": "x"}, "preloadPartsCut": {}}));
        for key in [
            fields::PRELOAD_PARTS,
            fields::PRELOAD_PARTS_CUT,
            fields::PRELOAD_PARTS_HELD,
        ] {
            s.merge_members(key, &from);
        }
        assert_eq!(
            s.get(fields::PRELOAD_PARTS),
            Some(&json!({"/a": 1, "/b": 3, "/c": "x"}))
        );
        assert_eq!(s.get(fields::PRELOAD_PARTS_CUT), Some(&json!({})));
        assert!(s.get(fields::PRELOAD_PARTS_HELD).is_none());
    }

    #[test]
    fn a_member_set_to_what_it_holds_changes_nothing() {
        let mut s = state(json!({"k": {"a": 1}, "n": 2}));
        s.set_member("k", "a", Some(json!(1)));
        s.set_member("k", "b", None);
        s.set_member("n", "b", None);
        assert!(!s.changed());
        s.set_member("n", "b", Some(json!(true)));
        assert_eq!(
            s.get("n"),
            Some(&json!({"b": true})),
            "not an object: replaced"
        );
        assert_eq!(s.members("k").count(), 1);
        s.set_member("k", "a", None);
        assert!(
            s.get("k").is_none(),
            "the last member takes its field along"
        );
    }
}
