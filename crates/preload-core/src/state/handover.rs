//! The hand-over a dehydrated session left ([`fields::DEHYDRATED_CONTEXT`], which the engine's
//! `session.sh dehydrate` writes), typed as a recovery reads it.

use serde_json::{Map, Value};

use super::{State, fields};

/// A dehydrated session's hand-over. A text member that is blank (or `null`) is absent; one of
/// another type is its JSON, as the engine's `jq -r` prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handover {
    /// `summary`.
    pub summary: Option<String>,
    /// `lastAction`.
    pub last_action: Option<String>,
    /// `nextSteps`, each step's text (`None` when it is not a list).
    pub next_steps: Option<Vec<String>>,
    /// `handoverInstructions`.
    pub handover_instructions: Option<String>,
    /// `userHistory`.
    pub user_history: Option<String>,
    /// `requiredFiles`: the entries that are text and not blank, as written.
    pub required_files: Vec<String>,
}

impl Handover {
    fn of(context: &Map<String, Value>) -> Self {
        let text = |key: &str| match context.get(key)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            Value::String(_) | Value::Null => None,
            other => Some(other.to_string()),
        };
        let list = |key: &str| match context.get(key) {
            Some(Value::Array(items)) => Some(items.as_slice()),
            _ => None,
        };
        Self {
            summary: text(fields::SUMMARY),
            last_action: text(fields::LAST_ACTION),
            next_steps: list(fields::NEXT_STEPS).map(|steps| {
                steps
                    .iter()
                    .map(|step| {
                        step.as_str()
                            .map_or_else(|| step.to_string(), str::to_owned)
                    })
                    .collect()
            }),
            handover_instructions: text(fields::HANDOVER_INSTRUCTIONS),
            user_history: text(fields::USER_HISTORY),
            required_files: list(fields::REQUIRED_FILES)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }
}

impl State {
    /// The hand-over the state holds, when `dehydratedContext` is an object.
    pub fn handover(&self) -> Option<Handover> {
        match self.get(fields::DEHYDRATED_CONTEXT)? {
            Value::Object(context) => Some(Handover::of(context)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn handover(context: Value) -> Option<Handover> {
        let mut state = State::default();
        state.set(fields::DEHYDRATED_CONTEXT, context);
        state.handover()
    }

    #[test]
    fn members_read_as_a_recovery_shows_them() {
        let h = handover(json!({
            "summary": "did things", "lastAction": "  ", "nextSteps": ["a", 2, {"b": 1}],
            "handoverInstructions": null, "userHistory": 7,
            "requiredFiles": ["x.md", " ", 3, "y.md"], "other": true
        }))
        .unwrap();
        assert_eq!(h.summary.as_deref(), Some("did things"));
        assert_eq!(h.last_action, None, "a blank text is absent");
        assert_eq!(
            h.next_steps,
            Some(vec!["a".into(), "2".into(), r#"{"b":1}"#.into()])
        );
        assert_eq!(h.handover_instructions, None);
        assert_eq!(h.user_history.as_deref(), Some("7"), "a number is its JSON");
        assert_eq!(h.required_files, vec!["x.md".to_owned(), "y.md".to_owned()]);
    }

    #[test]
    fn a_hand_over_that_is_not_an_object_is_none() {
        assert_eq!(handover(json!("text")), None);
        assert_eq!(handover(json!(null)), None);
        assert_eq!(State::default().handover(), None);
        let empty = handover(json!({"nextSteps": "one"})).unwrap();
        assert_eq!(empty.next_steps, None, "steps that are not a list");
        assert!(empty.required_files.is_empty());
    }
}
