//! Nothing cut silently: a stashed text larger than one `PostToolUse` answer (a rule's text, or
//! what did not fit the `SessionStart` output) reaches the model in labelled parts, every part,
//! in order, over the following tool calls. Judged on what the real binaries print.

use std::fs;

use serde_json::{Value, json};

use preload_test_support::pipeline_steps::{post_tool, session_start, tool_call};
use preload_test_support::sandbox::{Sandbox, read_json};

/// The default output budget (CONTRACT section 4).
const BUDGET: usize = 9_500;

/// A text of `lines` numbered lines, each `what` and its number.
fn numbered(what: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("{what} line {i:05}\n"))
        .collect::<Vec<_>>()
        .concat()
}

/// The stash of a state file (none when the file is absent).
fn stash_of(path: &std::path::Path) -> Vec<Value> {
    if !path.exists() {
        return Vec::new();
    }
    read_json(path)["pendingAllowInjections"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The pieces `label` was cut into, in the order the model saw them: each piece's number, its
/// count, and its body (up to the next piece or the end of the answer). Only labelled pieces
/// are found, so an unlabelled cut fails the checks on their numbers and bodies.
fn labelled_pieces(seen: &[String], label: &str) -> Vec<(usize, usize, String)> {
    let head = format!("[{label} (part ");
    let mut pieces = Vec::new();
    for text in seen {
        let mut rest = text.as_str();
        while let Some(at) = rest.find(&head) {
            let after = &rest[at + head.len()..];
            let (numbers, body) = after.split_once(")]\n").expect("a label line");
            let (i, n) = numbers.split_once('/').expect("i/n");
            let end = body.find(&head).unwrap_or(body.len());
            pieces.push((
                i.parse().unwrap(),
                n.parse().unwrap(),
                body[..end].trim_end_matches('\n').to_owned(),
            ));
            rest = &body[end..];
        }
    }
    pieces
}

/// Every part 1..n once, in order, each with the same n; their bodies joined.
fn assert_every_part_in_order(pieces: &[(usize, usize, String)]) -> String {
    assert!(
        pieces.len() >= 2,
        "cut into parts: {} piece(s)",
        pieces.len()
    );
    let n = pieces[0].1;
    let numbers: Vec<usize> = pieces.iter().map(|p| p.0).collect();
    assert_eq!(
        numbers,
        (1..=n).collect::<Vec<_>>(),
        "parts 1..{n}, in order"
    );
    assert!(pieces.iter().all(|p| p.1 == n), "one count for every part");
    pieces
        .iter()
        .map(|p| p.2.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_rule_text_larger_than_one_answer_arrives_in_labelled_parts_over_the_next_calls() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let text = numbered("brief", 1_500);
    assert!(text.chars().count() > 2 * BUDGET);
    let rules = json!([{"id": "long-brief", "trigger": {"type": "lifecycle", "condition": {"eq": "active"}},
        "payload": {"text": text}, "mode": "inline", "urgency": "allow", "inject": "once"}]);
    fs::write(
        sb.home.join(".claude/engine/guards.json"),
        rules.to_string(),
    )
    .unwrap();

    let state = sb.sessions.join("s/.state.json");
    let mut seen = Vec::new();
    for call in 0..12 {
        let answers = tool_call(&sb, "Bash", json!({"command": format!("ls {call}")}));
        for answer in &answers {
            answer.assert_contract();
            assert!(answer.context().chars().count() <= BUDGET);
        }
        seen.extend(
            answers
                .iter()
                .map(preload_test_support::sandbox::Answer::context)
                .filter(|c| !c.is_empty()),
        );
        if stash_of(&state).is_empty() {
            break;
        }
    }
    assert!(stash_of(&state).is_empty(), "every part went out");
    let pieces = labelled_pieces(&seen, "long-brief");
    let rebuilt = assert_every_part_in_order(&pieces);
    assert_eq!(rebuilt, text.trim_end(), "every line of the rule, in order");
    let calls_with_parts = seen
        .iter()
        .filter(|t| t.contains("[long-brief (part "))
        .count();
    assert_eq!(calls_with_parts, pieces.len(), "one part per answer");
}

#[test]
fn a_recovery_larger_than_the_session_start_output_arrives_in_labelled_parts() {
    let mut sb = Sandbox::new();
    let history = numbered("user said", 2_000);
    let dir = sb.session(
        "old",
        &json!({"pid": 4_000_000, "skill": "implement", "lifecycle": "dehydrating",
            "currentPhase": "1: Interrogation", "preloadedFiles": [], "pendingPreloads": [],
            "dehydratedContext": {"summary": "half done", "userHistory": history,
                "requiredFiles": []}}),
    );
    // A new Claude process starts and restores the dehydrated session's context.
    sb.pid = std::os::unix::process::parent_id();
    sb.conversation = "after-restart".to_owned();
    let start = session_start(&sb, "startup");
    let opening = start.context();
    assert!(
        opening.contains("[preload overflow:"),
        "the start says what is still to come"
    );
    assert!(
        !opening.contains("user said line 00000"),
        "too large for one slice"
    );
    assert!(read_json(&dir.join(".state.json"))["dehydratedContext"].is_null());

    // The agent's next calls (whitelisted ones: no session is active yet) bring the rest.
    // Before activation the stash waits in the seed's carry.
    let carry = sb.seed_path().with_extension("carry.json");
    assert!(!stash_of(&carry).is_empty(), "the rest is stashed");
    let mut seen = vec![opening];
    for call in 0..12 {
        let input = json!({"command": format!("engine session-search x{call}")});
        for answer in post_tool(&sb, "Bash", &input, &json!({})) {
            answer.assert_contract();
            seen.push(answer.context());
        }
        if stash_of(&carry).is_empty() {
            break;
        }
    }
    assert!(stash_of(&carry).is_empty(), "every part went out");
    let pieces = labelled_pieces(&seen, "session-start");
    let rebuilt = assert_every_part_in_order(&pieces);
    assert!(rebuilt.starts_with("## Session Recovery (Dehydrated Context)"));
    assert!(
        rebuilt.contains(history.trim_end()),
        "the whole user history, in order"
    );
}
