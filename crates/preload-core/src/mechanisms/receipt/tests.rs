use super::*;
use serde_json::{Value, json};

fn line(kind: &str, uuid: &str, parent: Option<&str>, rest: &Value) -> String {
    let mut line = json!({"type": kind, "uuid": uuid, "parentUuid": parent,
        "sessionId": "c1", "cwd": "/p", "isSidechain": false});
    for (k, v) in rest.as_object().unwrap() {
        line[k] = v.clone();
    }
    line.to_string()
}

/// A hook's context as the client writes it: its raw answer, then the context.
fn context(uuid: &str, parent: Option<&str>, text: &str) -> Vec<String> {
    let success = format!("{uuid}-s");
    vec![
        line(
            "attachment",
            &success,
            parent,
            &json!({"attachment": {"type": "hook_success",
            "hookEvent": "SessionStart", "stdout": text}}),
        ),
        line(
            "attachment",
            uuid,
            Some(&success),
            &json!({"attachment": {
            "type": "hook_additional_context", "hookEvent": "SessionStart",
            "content": [text]}}),
        ),
    ]
}

fn user(uuid: &str, parent: &str, text: &str, meta: bool) -> String {
    line(
        "user",
        uuid,
        Some(parent),
        &json!({"isMeta": meta,
        "message": {"role": "user", "content": [{"type": "text", "text": text}]}}),
    )
}

/// `/b.md` in two parts, each a block of its own.
const PART_1: &str = "[Preloaded: /b.md (part 1/2)]\nB1\n";
const PART_2: &str = "[Preloaded: /b.md (part 2/2)]\nB2\n";

/// One branch: a hook context each (`s1`, `s2`, … each on the one before), then the user's `go`.
fn one_branch(texts: &[&str]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut parent = None;
    for (i, text) in texts.iter().enumerate() {
        let uuid = format!("s{}", i + 1);
        lines.extend(context(&uuid, parent.as_deref(), text));
        parent = Some(uuid);
    }
    lines.push(user("u1", parent.as_deref().unwrap(), "go", false));
    lines
}

fn receipt(lines: &[String]) -> Receipt {
    Receipt::of_text(&(lines.join("\n") + "\n"), Path::new("/home")).unwrap()
}

fn counts(r: &Receipt) -> Vec<(&str, usize)> {
    r.files.iter().map(|f| (f.path.as_str(), f.count)).collect()
}

#[test]
fn each_block_of_the_branch_is_counted_once_and_hook_success_not_at_all() {
    let r = receipt(&one_branch(&[
        "[Preloaded: /a.md]\nA\n\n[Preloaded: /b.md (part 1/2)]\nB1\n",
        PART_2,
    ]));
    assert_eq!(r.client, Client::ClaudeCode);
    assert_eq!(r.conversation.as_deref(), Some("c1"));
    assert_eq!(r.contexts, 2);
    assert_eq!(counts(&r), vec![("/a.md", 1), ("/b.md", 1)]);
    assert_eq!(r.files[1].parts, 2);
    assert!(r.duplicates().is_empty());
}

#[test]
fn a_block_that_arrives_twice_is_a_duplicate_and_a_renewal_is_not() {
    let r = receipt(&one_branch(&[
        "[Preloaded: /a.md]\nA\n\n[Preloaded: /c.md]\nC\n",
        "[Preloaded: /a.md]\nA\n",
        "[Preloaded: /c.md (updated)]\nC2\n",
    ]));
    assert_eq!(counts(&r), vec![("/a.md", 2), ("/c.md", 1)]);
    assert_eq!(r.files[1].renewed, 1);
    let dups: Vec<&str> = r.duplicates().iter().map(|f| f.path.as_str()).collect();
    assert_eq!(dups, vec!["/a.md"]);
}

#[test]
fn a_file_received_whole_and_in_parts_is_a_duplicate() {
    let lines = one_branch(&[PART_1, PART_2, "[Preloaded: /b.md]\nB1B2\n"]);
    assert_eq!(counts(&receipt(&lines)), vec![("/b.md", 2)]);
}

#[test]
fn a_part_that_arrives_twice_counts_twice() {
    let lines = one_branch(&[PART_1, PART_2, PART_1]);
    assert_eq!(counts(&receipt(&lines)), vec![("/b.md", 2)]);
}

#[test]
fn a_skill_the_client_expanded_is_an_arrival_and_with_our_block_a_duplicate() {
    let mut lines = context("s1", None, "[Preloaded: /a.md]\nA\n");
    lines.push(user("u1", "s1", "/implement", false));
    lines.push(user(
        "u2",
        "u1",
        "Base directory for this skill: /home/skills/implement\n\n# Implement",
        true,
    ));
    let r = receipt(&lines);
    assert_eq!(
        counts(&r),
        vec![("/a.md", 1), ("/home/skills/implement/SKILL.md", 1)]
    );
    assert_eq!(r.files[1].expanded, 1);
    let record = ["/home/skills/implement/SKILL.md", "/a.md"];
    assert!(r.missing(record, Path::new("/home")).is_empty());
    lines.extend(context(
        "s2",
        Some("u2"),
        "[Preloaded: /home/skills/implement/SKILL.md]\nS\n",
    ));
    lines.push(user("u3", "s2", "go", false));
    assert_eq!(receipt(&lines).duplicates().len(), 1);
}

#[test]
fn what_the_record_lists_and_the_branch_never_shows_is_missing() {
    let lines = one_branch(&["[Preloaded: ~/a.md]\nA\n"]);
    let r = receipt(&lines);
    assert_eq!(counts(&r), vec![("/home/a.md", 1)]);
    assert_eq!(
        r.missing(["/home/a.md", "~/b.md", "/home/b.md"], Path::new("/home")),
        vec!["/home/b.md"]
    );
}

#[test]
fn counts_start_again_after_a_compaction() {
    let mut lines = one_branch(&["[Preloaded: /a.md]\nA\n"]);
    lines.push(line(
        "system",
        "b1",
        None,
        &json!({"subtype": "compact_boundary"}),
    ));
    lines.extend(context("s2", Some("b1"), "[Preloaded: /a.md]\nA\n"));
    lines.push(user("u2", "s2", "go on", false));
    assert_eq!(counts(&receipt(&lines)), vec![("/a.md", 1)]);
}

#[test]
fn a_codex_rollout_counts_its_developer_messages() {
    let record = |kind: &str, payload: Value| json!({"type": kind, "payload": payload}).to_string();
    let developer = |text: &str| {
        record(
            "response_item",
            json!({"type": "message", "role": "developer",
            "content": [{"type": "input_text", "text": text}]}),
        )
    };
    let text = [
        record("session_meta", json!({"id": "x-1", "cwd": "/p"})),
        developer("[Preloaded: /a.md]\nA\n"),
        developer("[Preloaded: /a.md]\nA\n"),
    ]
    .join("\n");
    let r = Receipt::of_text(&text, Path::new("/home")).unwrap();
    assert_eq!(r.client, Client::Codex);
    assert_eq!(counts(&r), vec![("/a.md", 2)]);
}

#[test]
fn a_file_that_is_no_transcript_is_refused() {
    assert_eq!(Receipt::of_text("{\"a\": 1}\n", Path::new("/")), None);
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.jsonl");
    assert!(matches!(
        Receipt::of_file(&missing, dir.path()),
        Err(ReceiptError::Unreadable { .. })
    ));
    let other = dir.path().join("notes.txt");
    std::fs::write(&other, "just text\n").unwrap();
    assert!(matches!(
        Receipt::of_file(&other, dir.path()),
        Err(ReceiptError::NotATranscript(_))
    ));
}
