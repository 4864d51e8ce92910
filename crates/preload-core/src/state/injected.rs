//! The rules already delivered, typed: `injectedRules` ([`fields::INJECTED_RULES`]), `{id:
//! true}`. A rule whose entry is anything but `true` is not marked.

use serde_json::Value;

use super::{State, fields};

impl State {
    /// Whether the rule `id` was delivered.
    pub fn is_injected(&self, id: &str) -> bool {
        self.member(fields::INJECTED_RULES, id) == Some(&Value::Bool(true))
    }

    /// Mark the rules `ids` delivered (the field is made only when one is not marked yet).
    pub fn mark_injected(&mut self, ids: &[String]) {
        for id in ids {
            self.set_member(fields::INJECTED_RULES, id, Some(Value::Bool(true)));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rule_is_marked_once_in_the_formats_shape() {
        let text = "{\n  \"injectedRules\": {\n    \"a\": true,\n    \"b\": \"yes\"\n  },\n  \"pid\": 1\n}\n";
        let mut s = State::parse(text).unwrap();
        assert!(s.is_injected("a") && !s.is_injected("b") && !s.is_injected("c"));
        s.mark_injected(&["a".to_owned()]);
        assert!(!s.changed());
        assert_eq!(s.to_pretty(), text);
        s.mark_injected(&["b".to_owned(), "c".to_owned()]);
        assert_eq!(
            s.to_pretty(),
            "{\n  \"injectedRules\": {\n    \"a\": true,\n    \"b\": true,\n    \"c\": true\n  },\n  \"pid\": 1\n}\n"
        );
        let mut fresh = State::default();
        fresh.mark_injected(&[]);
        assert!(fresh.get(fields::INJECTED_RULES).is_none());
        fresh.mark_injected(&["r".to_owned()]);
        assert_eq!(fresh.get(fields::INJECTED_RULES), Some(&json!({"r": true})));
    }
}
