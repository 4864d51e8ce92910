//! Unit tests of `counters`.

use serde_json::{Value, json};

use super::*;

fn state(text: &str) -> State {
    State::parse(text).unwrap()
}

fn count(key: &str, tool: &str) -> Delta {
    Delta::Count {
        key: key.to_owned(),
        main: !key.starts_with("sub:"),
        tool: tool.to_owned(),
        edited: None,
    }
}

/// The main agent's edit of `/a.rs`.
fn main_edit() -> Delta {
    Delta::Count {
        key: "main.jsonl".to_owned(),
        main: true,
        tool: "Edit".to_owned(),
        edited: Some("/a.rs".to_owned()),
    }
}

/// A state file's path in a directory of its own (kept while the first value lives).
fn state_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(".state.json");
    (tmp, file)
}

#[test]
fn counts_survive_a_stale_write_of_the_state() {
    let (_tmp, file) = state_file();
    let mut s = state(r#"{"pid": 5, "currentPhase": "1: A", "phaseHistory": ["0: Setup"]}"#);
    let far = Instant::now() + std::time::Duration::from_secs(2);
    for i in 0..3 {
        let c = update(&file, &s, far, far, &count("main.jsonl", "Read")).unwrap();
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
    let (_tmp, file) = state_file();
    let far = Instant::now() + std::time::Duration::from_secs(2);
    let s = state(r#"{"pid": 5}"#);
    let c = update(&file, &s, far, far, &count("main.jsonl", "Read")).unwrap();
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
    let (_tmp, file) = state_file();
    let before = state(r#"{"pid": 5, "currentPhase": "1: A", "phaseHistory": []}"#);
    let far = Instant::now() + std::time::Duration::from_secs(2);
    update(&file, &before, far, far, &count("main.jsonl", "Read")).unwrap();
    let after = state(
        r#"{"pid": 5, "currentPhase": "2: B", "phaseHistory": ["1: A"], "toolCallsByTranscript": {}}"#,
    );
    assert_eq!(Counters::read(&file, &after).get("main.jsonl"), 0);
    let c = update(&file, &after, far, far, &count("main.jsonl", "Bash")).unwrap();
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

/// Holds the latch of the directory of `file` the way another process would (its own open file
/// description), until dropped.
fn hold_latch(file: &Path) -> nix::fcntl::Flock<std::fs::File> {
    let dir = std::fs::File::open(file.parent().unwrap()).unwrap();
    nix::fcntl::Flock::lock(dir, nix::fcntl::FlockArg::LockExclusiveNonblock).unwrap()
}

#[test]
fn a_count_that_cannot_take_the_latch_goes_to_the_journal_and_is_folded_once() {
    let (_tmp, file) = state_file();
    let s = state(r#"{"pid": 5}"#);
    let far = Instant::now() + std::time::Duration::from_secs(2);
    let held = hold_latch(&file);
    for expected in 1..=3 {
        let now = Instant::now();
        let c = update(&file, &s, now, far, &count("main.jsonl", "Read")).unwrap();
        assert_eq!(
            c.get("main.jsonl"),
            expected,
            "the journal's counts are read"
        );
    }
    assert_eq!(journal::read(&journal_of(&file)).len(), 3);
    assert!(
        !file_of(&file).exists(),
        "nothing written without the latch"
    );
    drop(held);
    let c = update(&file, &s, far, far, &count("sub:a", "Read")).unwrap();
    assert_eq!((c.get("main.jsonl"), c.get("sub:a")), (3, 1));
    assert!(
        journal::read(&journal_of(&file)).is_empty(),
        "folded and emptied"
    );
    assert_eq!(Counters::read(&file, &s).get("main.jsonl"), 3);
}

#[test]
fn a_holder_killed_before_emptying_the_journal_counts_nothing_twice() {
    let (_tmp, file) = state_file();
    let journal = journal_of(&file);
    let s = state(r#"{"pid": 5}"#);
    let far = Instant::now() + std::time::Duration::from_secs(2);
    let held = hold_latch(&file);
    for _ in 0..2 {
        update(&file, &s, Instant::now(), far, &count("main.jsonl", "Bash")).unwrap();
    }
    let unfolded = std::fs::read(&journal).unwrap();
    drop(held);
    assert_eq!(
        update(&file, &s, far, far, &count("main.jsonl", "Bash"))
            .unwrap()
            .get("main.jsonl"),
        3
    );
    // The holder was killed after writing the counters, before emptying the journal; the last
    // append was torn by a power cut.
    let mut left = unfolded;
    left.extend_from_slice(b"\n{\"id\": \"9-9-9\", \"op\": \"cou");
    std::fs::write(journal::taken_path(&journal), &left).unwrap();
    assert_eq!(current(&file, &s).get("main.jsonl"), 3);
    let c = update(&file, &s, far, far, &count("main.jsonl", "Bash")).unwrap();
    assert_eq!(c.get("main.jsonl"), 4);
    assert!(journal::read(&journal).is_empty());
}

#[test]
fn a_mirror_says_whether_it_changed_the_state() {
    let (_tmp, file) = state_file();
    let far = Instant::now() + std::time::Duration::from_secs(2);
    let s = state(r#"{"pid": 5, "lastEditFile_old.jsonl": "/a"}"#);
    let c = update(&file, &s, far, far, &count("main.jsonl", "Read")).unwrap();
    let mut mirrored = s.clone();
    assert!(c.mirror(&mut mirrored), "a new count changes the state");
    assert_ne!(mirrored, s);
    assert!(
        !c.mirror(&mut mirrored),
        "the same counters again change nothing"
    );
    // A forgotten last edit is a change too.
    let mut stale = mirrored.clone();
    stale.set("lastEditFile_gone.jsonl", serde_json::json!("/b"));
    assert!(c.mirror(&mut stale));
    assert_eq!(stale, mirrored);
}

#[test]
fn the_latest_counts_are_mirrored_never_an_older_view() {
    let (_tmp, file) = state_file();
    let far = Instant::now() + std::time::Duration::from_secs(2);
    let s = state(r#"{"pid": 5, "currentPhase": "1: A"}"#);
    // Two hooks count one after the other; the second's mirror write found the lock busy.
    let first = update(&file, &s, far, far, &count("main.jsonl", "Read")).unwrap();
    let second = update(&file, &s, far, far, &count("main.jsonl", "Bash")).unwrap();
    assert_eq!((first.get("main.jsonl"), second.get("main.jsonl")), (1, 2));
    // The first then takes the lock: its own view would mirror one count.
    let mut own_view = s.clone();
    first.mirror(&mut own_view);
    assert_eq!(
        own_view.get("toolCallsByTranscript"),
        Some(&json!({"main.jsonl": 1}))
    );
    let mut latest = s.clone();
    assert!(mirror_latest(&file, &mut latest));
    assert_eq!(
        latest.get("toolCallsByTranscript"),
        Some(&json!({"main.jsonl": 2}))
    );
    assert_eq!(latest.get("preloadCountersSeq"), Some(&json!(2)));
    // A state already holding the newer mirror is not taken back to the older one.
    let mut newer = s.clone();
    second.mirror(&mut newer);
    assert!(!mirror_latest(&file, &mut newer));
    assert_eq!(newer, latest);
    // Counts still in the journal are not mirrored: folded later, they would count twice.
    let _held = hold_latch(&file);
    let third = update(
        &file,
        &newer,
        Instant::now(),
        far,
        &count("main.jsonl", "Read"),
    )
    .unwrap();
    assert!(third.pending());
    assert!(!mirror_latest(&file, &mut newer));
    assert_eq!(
        newer.get("toolCallsByTranscript"),
        Some(&json!({"main.jsonl": 2}))
    );
}

#[test]
fn a_counters_file_read_torn_is_not_taken_for_counts() {
    let (_tmp, file) = state_file();
    let far = Instant::now() + std::time::Duration::from_secs(2);
    let s = state(r#"{"pid": 5}"#);
    for _ in 0..3 {
        update(&file, &s, far, far, &count("main.jsonl", "Read")).unwrap();
    }
    let path = file_of(&file);
    let whole = fs_text(&path);
    assert!(whole.starts_with(CHECK_HEAD), "{whole}");
    assert_eq!(Counters::read(&file, &s).get("main.jsonl"), 3);
    // Two versions read at once: still JSON, with another count.
    let torn = whole.replacen("\"main.jsonl\": 3", "\"main.jsonl\": 2", 1);
    assert_ne!(torn, whole);
    std::fs::write(&path, &torn).unwrap();
    assert!(serde_json::from_str::<Value>(&torn).is_ok());
    assert_eq!(
        Counters::read(&file, &s).get("main.jsonl"),
        0,
        "the state's own (none) stand"
    );
    // A file of an earlier release has no check, and is read as it is.
    let legacy = format!("{{{}", &whole[CHECK_HEAD.len() + 18..]);
    assert!(serde_json::from_str::<Value>(&legacy).is_ok() && !legacy.contains("check"));
    std::fs::write(&path, &legacy).unwrap();
    assert_eq!(Counters::read(&file, &s).get("main.jsonl"), 3);
}

fn fs_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn far() -> Instant {
    Instant::now() + std::time::Duration::from_secs(2)
}

#[test]
fn the_counters_file_keeps_its_text() {
    let (_tmp, file) = state_file();
    let s = state(
        r#"{"pid": 5, "startedAt": "2026-01-01T00:00:00Z", "currentPhase": "1: A",
            "phaseHistory": ["0: Setup"], "toolCallsByTranscript": {"sub:z": 4, "main.jsonl": 2},
            "toolCallsSinceLastLog": 2, "primaryTranscriptKey": "main.jsonl",
            "lastEditFile_sub:z": "/z.rs", "preloadCountersSeq": 7}"#,
    );
    // A count a hook journalled while the latch was busy.
    std::fs::write(
        journal_of(&file),
        "\n{\"id\":\"1-2-3\",\"op\":\"count\",\"key\":\"sub:y\",\"main\":false,\"tool\":\"Read\",\
         \"edited\":null}\n",
    )
    .unwrap();
    let edit = main_edit();
    update(&file, &s, far(), far(), &edit).unwrap();
    assert_eq!(
        fs_text(&file_of(&file)),
        concat!(
            "{\n",
            "  \"check\": \"77ccd5a5c795dd88\",\n",
            "  \"epoch\": \"2026-01-01T00:00:00Z|5|1|1: A\",\n",
            "  \"seq\": 8,\n",
            "  \"counts\": {\n",
            "    \"sub:z\": 4,\n",
            "    \"main.jsonl\": 3,\n",
            "    \"sub:y\": 1\n",
            "  },\n",
            "  \"lastEdit\": {\n",
            "    \"sub:z\": \"/z.rs\",\n",
            "    \"main.jsonl\": \"/a.rs\"\n",
            "  },\n",
            "  \"primary\": \"main.jsonl\",\n",
            "  \"sinceLastLog\": 3,\n",
            "  \"applied\": [\n",
            "    \"1-2-3\"\n",
            "  ]\n",
            "}\n"
        )
    );
    // No main agent yet: no primary key, nothing edited, nothing folded.
    let (_tmp, file) = state_file();
    update(&file, &state("{}"), far(), far(), &count("sub:a", "Read")).unwrap();
    assert_eq!(
        fs_text(&file_of(&file)),
        concat!(
            "{\n",
            "  \"check\": \"883a8fb07bff76fb\",\n",
            "  \"epoch\": \"|0|0|\",\n",
            "  \"seq\": 1,\n",
            "  \"counts\": {\n",
            "    \"sub:a\": 1\n",
            "  },\n",
            "  \"lastEdit\": {},\n",
            "  \"primary\": null,\n",
            "  \"sinceLastLog\": 0,\n",
            "  \"applied\": []\n",
            "}\n"
        )
    );
}

#[test]
fn a_journal_record_keeps_its_text() {
    let (_tmp, file) = state_file();
    let s = state(r#"{"pid": 5}"#);
    let _held = hold_latch(&file);
    let edit = main_edit();
    let reset = Delta::Reset {
        key: "sub:a".to_owned(),
        main: false,
    };
    for delta in [&edit, &count("sub:a", "Read"), &reset] {
        update(&file, &s, Instant::now(), far(), delta).unwrap();
    }
    let records = journal::read(&journal_of(&file));
    let id = |i: usize| records[i]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        fs_text(&journal_of(&file)),
        format!(
            "\n{{\"id\":\"{}\",\"op\":\"count\",\"key\":\"main.jsonl\",\"main\":true,\
             \"tool\":\"Edit\",\"edited\":\"/a.rs\"}}\n\
             \n{{\"id\":\"{}\",\"op\":\"count\",\"key\":\"sub:a\",\"main\":false,\
             \"tool\":\"Read\",\"edited\":null}}\n\
             \n{{\"id\":\"{}\",\"op\":\"reset\",\"key\":\"sub:a\",\"main\":false}}\n",
            id(0),
            id(1),
            id(2)
        )
    );
    let c = current(&file, &s);
    assert_eq!((c.get("main.jsonl"), c.get("sub:a")), (1, 0));
}

#[test]
fn a_mirror_keeps_the_state_text_around_the_counters() {
    let (_tmp, file) = state_file();
    let s =
        state(r#"{"pid": 5, "toolCallsByTranscript": {"sub:z": 4}, "lastEditFile_gone": "/g"}"#);
    let edit = main_edit();
    let c = update(&file, &s, far(), far(), &edit).unwrap();
    let mut other = state(
        r#"{"pid": 5, "lastEditFile_x": "/x", "toolCallsByTranscript": {"main.jsonl": 0, "b": 1},
            "tail": true}"#,
    );
    assert!(c.mirror(&mut other));
    assert_eq!(
        other.to_pretty(),
        concat!(
            "{\n",
            "  \"pid\": 5,\n",
            "  \"toolCallsByTranscript\": {\n",
            "    \"main.jsonl\": 1,\n",
            "    \"b\": 1,\n",
            "    \"sub:z\": 4\n",
            "  },\n",
            "  \"tail\": true,\n",
            "  \"toolCallsSinceLastLog\": 1,\n",
            "  \"primaryTranscriptKey\": \"main.jsonl\",\n",
            "  \"preloadCountersSeq\": 1,\n",
            "  \"lastEditFile_gone\": \"/g\",\n",
            "  \"lastEditFile_main.jsonl\": \"/a.rs\"\n",
            "}\n"
        )
    );
}

#[test]
fn a_member_of_the_counters_file_in_another_shape_reads_as_absent() {
    let (_tmp, file) = state_file();
    let s = state(r#"{"pid": 5, "toolCallsByTranscript": {}}"#);
    let epoch = epoch_of(&s);
    // A file without a check (an earlier release's), its members in shapes they do not take.
    let odd = json!({"epoch": epoch, "seq": 4, "counts": {"a": "x", "b": 2, "c": 1.5},
        "lastEdit": 5, "primary": 3, "sinceLastLog": "2", "applied": ["1-1-1", 4]});
    std::fs::write(file_of(&file), odd.to_string()).unwrap();
    let c = Counters::read(&file, &s);
    assert_eq!((c.get("a"), c.get("b"), c.get("c")), (0, 2, 1));
    assert_eq!(
        (c.seq, c.since_last_log, c.primary.as_deref()),
        (4, 0, None)
    );
    assert!(c.last_edit.is_empty());
    // The record it folded already is not counted again; the others are.
    std::fs::write(
        journal_of(&file),
        "\n{\"id\":\"1-1-1\",\"op\":\"count\",\"key\":\"b\",\"main\":false,\"tool\":\"Read\"}\n\
         \n{\"id\":\"1-1-2\",\"op\":\"count\",\"key\":\"b\",\"main\":false,\"tool\":\"Edit\",\
         \"edited\":7}\n",
    )
    .unwrap();
    assert_eq!(current(&file, &s).get("b"), 3);
    // An epoch that is not a string, or a file that is not an object, holds no counters.
    for text in [
        json!({"epoch": 1, "seq": 9, "counts": {"b": 7}}).to_string(),
        json!([epoch, 9, {"b": 7}]).to_string(),
    ] {
        std::fs::write(file_of(&file), text).unwrap();
        assert_eq!(read_checked(&file_of(&file)), None);
    }
}

#[test]
fn a_journal_line_that_is_not_a_change_is_skipped() {
    let lines = [
        json!({"id": "1", "op": "count", "key": "k", "main": true, "tool": "Read"}),
        json!({"id": "2", "op": "count", "key": "k", "main": true, "tool": "Edit", "edited": 7}),
        json!({"id": "3", "op": "reset", "key": "k", "main": "yes"}),
        json!({"id": "4", "op": "rename", "key": "k", "main": true}),
        json!({"id": 5, "op": "reset", "key": "k", "main": true}),
        json!({"op": "reset", "key": "k", "main": true}),
        json!({"id": "7", "op": "count", "key": "k", "main": true}),
        json!({"id": "8", "op": "reset", "key": "k", "main": false, "later": [1]}),
    ];
    let ids: Vec<String> = delta::records(&lines).into_iter().map(|r| r.id).collect();
    assert_eq!(ids, ["1", "2", "8"]);
    assert_eq!(
        delta::records(&lines[1..2])[0].delta,
        Delta::Count {
            key: "k".to_owned(),
            main: true,
            tool: "Edit".to_owned(),
            edited: None
        }
    );
}
