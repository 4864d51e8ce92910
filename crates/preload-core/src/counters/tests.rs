//! Unit tests of `counters`.

use super::*;

fn state(text: &str) -> State {
    State::parse(text).unwrap()
}

#[test]
fn counts_survive_a_stale_write_of_the_state() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(".state.json");
    let mut s = state(r#"{"pid": 5, "currentPhase": "1: A", "phaseHistory": ["0: Setup"]}"#);
    let far = Instant::now() + std::time::Duration::from_secs(2);
    for i in 0..3 {
        let c = update(&file, &s, far, |c| {
            c.count("main.jsonl", true, "Read", None);
        })
        .unwrap();
        // The first count reaches the state; the others could not (its lock was busy).
        if i == 0 {
            c.mirror(&mut s);
        }
    }
    // The engine writes back what it read after the first count's mirror (sequence 1).
    let stale = state(
        r#"{"pid": 5, "currentPhase": "1: A", "phaseHistory": ["0: Setup"],
                "toolCallsByTranscript": {"main.jsonl": 1}, "preloadCountersSeq": 1}"#,
    );
    let c = Counters::read(&file, &stale);
    assert_eq!(c.get("main.jsonl"), 3);
    let mut mirrored = stale.clone();
    c.mirror(&mut mirrored);
    assert_eq!(
        mirrored.number(fields::TOOL_CALLS_SINCE_LAST_LOG),
        Some(3.0)
    );
    assert_eq!(
        mirrored.str(fields::PRIMARY_TRANSCRIPT_KEY),
        Some("main.jsonl")
    );
}

#[test]
fn a_value_someone_else_sets_stands() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(".state.json");
    let far = Instant::now() + std::time::Duration::from_secs(2);
    let s = state(r#"{"pid": 5}"#);
    let c = update(&file, &s, far, |c| {
        c.count("main.jsonl", true, "Read", None);
    })
    .unwrap();
    let mut mirrored = s.clone();
    c.mirror(&mut mirrored);
    // A tool of the engine's sets the counter on the current state.
    mirrored
        .object_mut(fields::TOOL_CALLS_BY_TRANSCRIPT)
        .insert("main.jsonl".into(), json!(9));
    assert_eq!(Counters::read(&file, &mirrored).get("main.jsonl"), 9);
    // A copy of the state from before the first count (no sequence yet) is stale.
    let stale = state(r#"{"pid": 5, "toolCallsByTranscript": {}}"#);
    assert_eq!(Counters::read(&file, &stale).get("main.jsonl"), 1);
    // A new session (another `startedAt`) starts from its own values.
    let fresh = state(r#"{"pid": 5, "startedAt": "later", "toolCallsByTranscript": {}}"#);
    assert_eq!(Counters::read(&file, &fresh).get("main.jsonl"), 0);
}

#[test]
fn a_phase_change_by_the_engine_starts_over_from_its_reset() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(".state.json");
    let before = state(r#"{"pid": 5, "currentPhase": "1: A", "phaseHistory": []}"#);
    let far = Instant::now() + std::time::Duration::from_secs(2);
    update(&file, &before, far, |c| {
        c.count("main.jsonl", true, "Read", None);
    })
    .unwrap();
    let after = state(
        r#"{"pid": 5, "currentPhase": "2: B", "phaseHistory": ["1: A"], "toolCallsByTranscript": {}}"#,
    );
    assert_eq!(Counters::read(&file, &after).get("main.jsonl"), 0);
    let c = update(&file, &after, far, |c| {
        c.count("main.jsonl", true, "Bash", None);
    })
    .unwrap();
    assert_eq!(c.get("main.jsonl"), 1);
}

#[test]
fn an_edit_of_the_same_file_counts_once_and_sub_agents_count_apart() {
    let mut c = Counters::from_state(&state("{}"));
    assert!(c.count("main.jsonl", true, "Edit", Some("/a.rs")));
    assert!(!c.count("main.jsonl", true, "Edit", Some("/a.rs")));
    assert!(c.count("main.jsonl", true, "Edit", Some("/b.rs")));
    assert!(c.count("sub:x", false, "Read", None));
    assert_eq!((c.get("main.jsonl"), c.get("sub:x")), (2, 1));
    let mut s = state("{}");
    c.mirror(&mut s);
    assert_eq!(s.number(fields::TOOL_CALLS_SINCE_LAST_LOG), Some(2.0));
    assert_eq!(s.str("lastEditFile_main.jsonl"), Some("/b.rs"));
    c.count("main.jsonl", true, "Read", None);
    c.mirror(&mut s);
    assert!(s.get("lastEditFile_main.jsonl").is_none());
    c.reset("main.jsonl", true);
    c.mirror(&mut s);
    assert_eq!(s.number(fields::TOOL_CALLS_SINCE_LAST_LOG), Some(0.0));
}
