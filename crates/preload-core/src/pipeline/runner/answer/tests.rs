use serde_json::{Value, json};

use super::*;
use crate::pipeline::runner::policy::{Policy, matches};
use crate::primitives::env::Agent;
use crate::{Context, HookInput};
use std::sync::Arc;

const EVENTS: [HookEvent; 6] = [
    HookEvent::SessionStart,
    HookEvent::UserPromptSubmit,
    HookEvent::PreToolUse,
    HookEvent::PostToolUse,
    HookEvent::PreCompact,
    HookEvent::Stop,
];

fn outputs() -> Vec<HookOutput> {
    vec![
        HookOutput::Silent,
        HookOutput::Context(String::new()),
        HookOutput::Context("[Preloaded: /a]\nA\n".into()),
        HookOutput::Allow(None),
        HookOutput::Allow(Some(String::new())),
        HookOutput::Allow(Some("ctx".into())),
        HookOutput::Deny("no".into()),
        HookOutput::Deny(String::new()),
        HookOutput::Block("held".into()),
    ]
}

#[test]
fn one_output_merged_alone_is_what_its_binary_prints() {
    for event in EVENTS {
        for output in outputs() {
            assert_eq!(
                merge(event, std::slice::from_ref(&output)).render(event, Agent::ClaudeCode),
                render(event, &output, Agent::ClaudeCode),
                "{event:?} {output:?}"
            );
        }
    }
}

#[test]
fn silent_policies_add_nothing() {
    for event in EVENTS {
        for output in outputs() {
            let alone = render(event, &output, Agent::ClaudeCode);
            let padded = [HookOutput::Silent, output.clone(), HookOutput::Silent];
            assert_eq!(
                merge(event, &padded).render(event, Agent::ClaudeCode),
                alone,
                "{event:?}"
            );
        }
    }
}

/// The answer `outputs` merge into for `event`, read back.
fn merged(event: HookEvent, outputs: &[HookOutput]) -> Value {
    let line = merge(event, outputs).render(event, Agent::ClaudeCode);
    serde_json::from_str(&line.expect("an answer")).unwrap()
}

#[test]
fn deny_wins_and_keeps_every_reason_and_context_in_order() {
    let v = merged(
        HookEvent::PreToolUse,
        &[
            HookOutput::Allow(Some("first".into())),
            HookOutput::Deny("held once".into()),
            HookOutput::Deny("and again".into()),
            HookOutput::Allow(None),
        ],
    );
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "held once\n\nand again",
            "additionalContext": "first"}})
    );
}

#[test]
fn contexts_join_in_order_with_a_blank_line() {
    let v = merged(
        HookEvent::PostToolUse,
        &[
            HookOutput::Context("[Preloaded: /a]\nA\n".into()),
            HookOutput::Silent,
            HookOutput::Context("[Preloaded: /b]\nB\n".into()),
        ],
    );
    assert_eq!(
        v["hookSpecificOutput"]["additionalContext"],
        "[Preloaded: /a]\nA\n\n\n[Preloaded: /b]\nB\n"
    );
    assert!(v.get("decision").is_none());
}

#[test]
fn blocks_join_and_sit_beside_context() {
    let v = merged(
        HookEvent::PostToolUse,
        &[
            HookOutput::Block("one".into()),
            HookOutput::Context("ctx".into()),
            HookOutput::Block("two".into()),
        ],
    );
    assert_eq!(v["decision"], "block");
    assert_eq!(v["reason"], "one\n\ntwo");
    assert_eq!(v["hookSpecificOutput"]["additionalContext"], "ctx");
}

#[test]
fn nothing_said_prints_nothing() {
    for event in EVENTS {
        assert_eq!(merge(event, &[]).render(event, Agent::ClaudeCode), None);
        assert_eq!(
            merge(event, &[HookOutput::Silent, HookOutput::Silent])
                .render(event, Agent::ClaudeCode),
            None
        );
    }
}

fn call(event: &str, fields: &Value) -> HookInput {
    let mut v = json!({"hook_event_name": event});
    for (k, x) in fields.as_object().unwrap() {
        v[k] = x.clone();
    }
    HookInput::from_value(v)
}

#[test]
fn matchers_follow_the_clients_rules() {
    let bash = call("PostToolUse", &json!({"tool_name": "Bash"}));
    let edit = call("PostToolUse", &json!({"tool_name": "NotebookEdit"}));
    let post = HookEvent::PostToolUse;
    assert!(matches("*", post, &bash));
    assert!(matches("", post, &bash));
    assert!(matches("Skill|Bash", post, &bash));
    assert!(matches("Skill, Bash", post, &bash));
    assert!(!matches("Skill", post, &bash));
    assert!(
        !matches("Bas", post, &bash),
        "an exact list is not a prefix"
    );
    assert!(matches("Edit.*", post, &edit), "a regex is unanchored");
    assert!(!matches("^Edit$", post, &edit));
    assert!(!matches("(", post, &bash), "a broken regex matches nothing");
    let compact = call("SessionStart", &json!({"source": "compact"}));
    let startup = call("SessionStart", &json!({"source": "startup"}));
    assert!(matches("compact", HookEvent::SessionStart, &compact));
    assert!(!matches("compact", HookEvent::SessionStart, &startup));
    let nothing = call("PreToolUse", &json!({}));
    assert!(!matches("Bash", HookEvent::PreToolUse, &nothing));
    assert!(matches("*", HookEvent::PreToolUse, &nothing));
    let stop = call("Stop", &json!({}));
    assert!(
        matches("whatever", HookEvent::Stop, &stop),
        "no matcher on Stop"
    );
}

#[test]
fn a_policy_runs_when_any_of_its_rows_matches() {
    let policy = |matchers: Vec<&'static str>| Policy {
        name: "templates",
        event: HookEvent::PostToolUse,
        matchers,
        handler: Arc::new(|_: &HookInput, _: &Context| Ok(HookOutput::Silent)),
    };
    let bash = call("PostToolUse", &json!({"tool_name": "Bash"}));
    let read = call("PostToolUse", &json!({"tool_name": "Read"}));
    assert!(policy(vec![]).selected(HookEvent::PostToolUse, &read));
    assert!(policy(vec!["Skill", "Bash"]).selected(HookEvent::PostToolUse, &bash));
    assert!(!policy(vec!["Skill", "Bash"]).selected(HookEvent::PostToolUse, &read));
    assert!(format!("{:?}", policy(vec![])).contains("templates"));
}

#[test]
fn later_policies_share_what_is_left_of_the_budget() {
    assert_eq!(share(9_500, 0), 9_500);
    assert_eq!(share(9_500, 4_000), 5_498);
    assert_eq!(share(9_500, 9_499), MIN_BUDGET);
    let used = used_after(0, &HookOutput::Context("abc".into()));
    assert_eq!(used, 3);
    assert_eq!(used_after(used, &HookOutput::Silent), 3);
    assert_eq!(used_after(used, &HookOutput::Allow(None)), 3);
    assert_eq!(used_after(used, &HookOutput::Deny("é".into())), 3 + 2 + 1);
    // What the merge prints is exactly what was counted.
    let outputs = [
        HookOutput::Context("abc".into()),
        HookOutput::Context("de".into()),
    ];
    let total = outputs.iter().fold(0, used_after);
    let v = merged(HookEvent::PostToolUse, &outputs);
    let text = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(delivery::chars(text), total);
}

#[test]
fn a_late_policy_leaves_the_answers_before_it_and_fails_open() {
    let before = [HookOutput::Deny("no".into()), HookOutput::Silent];
    let line = String::from_utf8(answer_if_late(
        HookEvent::PreToolUse,
        &before,
        HookEvent::PreToolUse,
        Agent::ClaudeCode,
    ))
    .unwrap();
    assert!(line.ends_with('\n'));
    let v: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(v["hookSpecificOutput"]["permissionDecisionReason"], "no");
    let none = answer_if_late(
        HookEvent::PostToolUse,
        &[],
        HookEvent::PostToolUse,
        Agent::ClaudeCode,
    );
    assert!(none.is_empty(), "nothing said, nothing printed");
    let allow = String::from_utf8(answer_if_late(
        HookEvent::PreToolUse,
        &[],
        HookEvent::PreToolUse,
        Agent::ClaudeCode,
    ))
    .unwrap();
    assert!(allow.contains("\"allow\""), "{allow}");
}

/// Codex takes a PreToolUse `allow` without `updatedInput` for an error and drops the
/// answer's context: to it an allowed call's answer carries the context alone, and a deny is
/// a deny.
#[test]
fn codex_hears_no_allow_decision() {
    let pre = HookEvent::PreToolUse;
    let allow = HookOutput::Allow(Some("[Preloaded: /a]\nA\n".into()));
    let line = render(pre, &allow, Agent::Codex).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "additionalContext": "[Preloaded: /a]\nA\n"}})
    );
    let claude: Value =
        serde_json::from_str(&render(pre, &allow, Agent::ClaudeCode).unwrap()).unwrap();
    assert_eq!(claude["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(render(pre, &HookOutput::Allow(None), Agent::Codex), None);
    assert_eq!(render(pre, &fail_open(pre), Agent::Codex), None);
    let deny: Value =
        serde_json::from_str(&render(pre, &HookOutput::Deny("no".into()), Agent::Codex).unwrap())
            .unwrap();
    assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(deny["hookSpecificOutput"]["permissionDecisionReason"], "no");
}
