//! The guard rules part of `preload explain`: each rule of `guards.json`, whether it matches a
//! tool call and why, and the verdict the matches compose into.
//!
//! The decision itself is the rule engine's ([`rules::evaluate`], [`rules::compose`]); this
//! module only describes each trigger with the values it was tested on.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::words::plural;
use preload_core::pipeline::rules::{self, Facts, Rule, Threshold, Trigger};
use preload_core::state::fields;
use preload_core::state::{Field, Phase, QUEUED, State};

/// What a rule's trigger tests, with the values it was tested on.
pub fn condition(rule: &Rule, facts: &Facts) -> String {
    let state = facts.state;
    match &rule.trigger {
        Trigger::ContextThreshold(threshold) => {
            let usage = state.number(fields::CONTEXT_USAGE).unwrap_or(0.0);
            let (gte, name) = match threshold {
                Threshold::Value(v) => (*v, String::new()),
                Threshold::Overflow => (facts.overflow_threshold, " (OVERFLOW_THRESHOLD)".into()),
            };
            format!("contextUsage {usage} >= {gte}{name}")
        }
        Trigger::Lifecycle {
            no_active_session,
            eq,
        } => {
            let lifecycle = state
                .lifecycle()
                .map(|l| l.name().to_owned())
                .unwrap_or_default();
            let mut tests = Vec::new();
            if *no_active_session {
                tests.push("no active session".to_owned());
            }
            if let Some(eq) = eq {
                tests.push(format!("lifecycle == {eq:?}"));
            }
            format!("{} (lifecycle {lifecycle:?})", tests.join(" or "))
        }
        Trigger::Phase(needle) => format!(
            "currentPhase {:?} contains {needle:?}",
            state.current_phase().map_or("", Phase::as_str)
        ),
        Trigger::ToolCount { field, gte_field } => format!(
            "{field} {} >= {gte_field} {}",
            state.number(field).unwrap_or(0.0),
            state.number(gte_field).unwrap_or(999.0)
        ),
        Trigger::Discovery(field) => {
            let n = state.field(field).map_or(0, Field::entries);
            format!("{field} not empty ({})", plural(n, "entry", "entries"))
        }
        Trigger::PerTranscriptToolCount { gte, eq } => {
            let key = facts.counter_key.unwrap_or("(no transcript)");
            let count = facts.counter_key.map_or(0, |k| state.calls_of(k));
            match (gte, eq) {
                (Some(gte), _) => format!("toolCallsByTranscript[{key}] {count} >= {gte}"),
                (None, Some(eq)) => format!("toolCallsByTranscript[{key}] {count} == {eq}"),
                (None, None) => format!("toolCallsByTranscript[{key}] {count}: no threshold"),
            }
        }
    }
}

fn already_injected(rule: &Rule, state: &State) -> bool {
    rule.once && state.is_injected(&rule.id)
}

fn kind(rule: &Rule) -> String {
    format!(
        "{:?}, {:?}, priority {}",
        rule.urgency, rule.mode, rule.priority
    )
    .to_lowercase()
}

/// One line per rule (`match`, `-` for no match, `skip` with the reason) and the verdict of the
/// matches for `tool` and its `input`.
pub fn explain_rules(
    rules: &[Rule],
    facts: &Facts,
    tool: &str,
    input: Option<&Map<String, Value>>,
) -> String {
    let mut out = String::new();
    let mut matched = Vec::new();
    for rule in rules {
        let (tag, why) = if already_injected(rule, facts.state) {
            ("skip ", "inject once: already injected".to_owned())
        } else if !rule.applies_to(facts.tool) {
            ("skip ", format!("its toolFilter leaves out {tool}"))
        } else {
            let found = rules::evaluate(std::slice::from_ref(rule), facts);
            let tag = if found.is_empty() { "-    " } else { "match" };
            matched.extend(found);
            (tag, condition(rule, facts))
        };
        let _ = writeln!(out, "  {tag}  {} ({}): {why}", rule.id, kind(rule));
    }
    let ids = |list: &[rules::Matched]| {
        list.iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let blocking = matched.iter().filter(|m| m.urgency.is_blocking()).count();
    let verdict = rules::compose(matched, tool, input);
    let _ = write!(
        out,
        "  verdict: {}",
        if verdict.deny.is_empty() {
            "allow".to_owned()
        } else {
            format!("deny by {}", ids(&verdict.deny))
        }
    );
    if verdict.deny.is_empty() && blocking > 0 {
        let _ = write!(out, " (the blocking rules' whitelist lets {tool} through)");
    }
    if !verdict.allow.is_empty() {
        let _ = write!(out, "; speaking: {}", ids(&verdict.allow));
    }
    out
}

/// The state as the guard engine decided on it: after this call's counting (`after`), with
/// the queue as it stood before this call's claims (`before`'s, `after`'s and what the call
/// queued) and the once-only rules as they stood before it.
pub fn decision_state(before: &State, after: &State, queued: &[String]) -> State {
    let mut view = after.clone();
    let mut pending = before.path_list(QUEUED);
    for file in after
        .path_list(QUEUED)
        .into_iter()
        .chain(queued.iter().cloned())
    {
        if !pending.contains(&file) {
            pending.push(file);
        }
    }
    view.set_paths(QUEUED, pending);
    match before.get(fields::INJECTED_RULES) {
        Some(v) => view.set(fields::INJECTED_RULES, v.clone()),
        None => {
            view.remove(fields::INJECTED_RULES);
        }
    }
    view
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(value: &Value) -> State {
        State::parse(&value.to_string()).unwrap()
    }

    #[test]
    fn each_rule_says_whether_and_why() {
        let rules = rules::parse(
            &json!([
                {"id": "gate", "trigger": {"type": "lifecycle", "condition": {"noActiveSession": true}},
                 "urgency": "block", "payload": {"text": "activate"}, "whitelist": ["Read(*)"]},
                {"id": "warn", "trigger": {"type": "perTranscriptToolCount", "condition": {"gte": 3}},
                 "payload": {"text": "log"}},
                {"id": "bash-only", "trigger": {"type": "phase", "condition": {"matches": "1"}},
                 "toolFilter": {"include": ["Bash"]}, "payload": {"text": "x"}}
            ])
            .to_string(),
        )
        .unwrap();
        let s = state(&json!({"lifecycle": "none", "toolCallsByTranscript": {"t": 4}}));
        let facts = Facts {
            state: &s,
            counter_key: Some("t"),
            tool: Some("Read"),
            overflow_threshold: 0.76,
        };
        let text = explain_rules(&rules, &facts, "Read", None);
        assert!(
            text.contains(
                "match  gate (block, inline, priority 999): no active session (lifecycle \"none\")"
            ),
            "{text}"
        );
        assert!(text.contains("match  warn"), "{text}");
        assert!(text.contains("toolCallsByTranscript[t] 4 >= 3"), "{text}");
        assert!(text.contains("skip   bash-only"), "{text}");
        assert!(
            text.contains(
                "verdict: allow (the blocking rules' whitelist lets Read through); speaking: warn"
            ),
            "{text}"
        );
        let write = Facts {
            tool: Some("Write"),
            ..facts
        };
        let text = explain_rules(&rules, &write, "Write", None);
        assert!(text.contains("verdict: deny by gate"), "{text}");
        assert!(!text.contains("lets Write through"), "{text}");
    }

    #[test]
    fn the_decision_state_has_the_queue_before_its_claims() {
        let before = state(&json!({"pendingPreloads": ["/a"], "injectedRules": {"r": true}}));
        let after = state(&json!({"pendingPreloads": [], "toolCallsByTranscript": {"t": 1}}));
        let view = decision_state(&before, &after, &["/b".to_owned()]);
        assert_eq!(view.path_list(QUEUED), ["/a", "/b"]);
        assert_eq!(view.get(fields::INJECTED_RULES), Some(&json!({"r": true})));
        assert_eq!(view.calls_of("t"), 1);
    }
}
