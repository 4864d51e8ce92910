//! Unit tests of `state`.

use super::*;
use crate::primitives::file;
use serde_json::json;
use std::fs;
use std::time::{Duration, Instant};

const REAL_SHAPED: &str = r#"{
  "pid": 424242,
  "skill": "implement",
  "lifecycle": "active",
  "loading": true,
  "zUnknownField": {"b": 1, "a": [3, 2, 1]},
  "currentPhase": "0: Setup",
  "toolUseWithoutLogsWarnAfter": 3,
  "preloadedFiles": [
    "/h/.claude/engine/.directives/COMMANDS.md"
  ],
  "touchedDirs": {},
  "pendingPreloads": [],
  "contextUsage": 0.4312,
  "aaa": null
}
"#;

fn inode_of(path: &std::path::Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&fs::metadata(path).unwrap())
}

/// The file at `path` is the one it was (`inode`), its text `text`: nothing was written.
fn assert_untouched(path: &std::path::Path, text: &str, inode: u64) {
    assert_eq!(fs::read_to_string(path).unwrap(), text);
    assert_eq!(inode_of(path), inode);
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(2)
}

#[test]
fn parse_fields_keeps_only_the_named_fields_and_rejects_what_parse_rejects() {
    let state = State::parse_fields(REAL_SHAPED, &["pid", "lifecycle", "absent"]).unwrap();
    assert_eq!(state.map().len(), 2);
    assert_eq!(state.pid("pid"), Some(424_242));
    assert_eq!(state.str("lifecycle"), Some("active"));
    let last = State::parse_fields(
        "{\"pid\": 1, \"x\": [1, {\"pid\": 7}], \"pid\": 2}",
        &["pid"],
    );
    assert_eq!(
        last.unwrap().pid("pid"),
        Some(2),
        "the last duplicate wins, as in parse"
    );
    for bad in [
        "{not json",
        "",
        "[1,2]",
        "\"text\"",
        "{\"pid\": 1} trailing",
        "{\"a\": [1,}",
    ] {
        assert!(
            State::parse(bad).is_err() && State::parse_fields(bad, &["pid"]).is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn peeking_finds_top_level_members_only() {
    let text = r#"{"watchTaskId": {"pid": 7, "s": "}\"{"}, "list": [1, {"pid": 8}], "pid": 424242, "x": "y"}"#;
    assert_eq!(peek_pid(text, "pid"), Some(424_242));
    assert_eq!(peek_member(text, "x"), Some("\"y\""));
    assert_eq!(peek_member(text, "list"), Some(r#"[1, {"pid": 8}]"#));
    assert_eq!(peek_pid(text, "lastKnownPid"), None);
    assert_eq!(peek_pid(r#"{"pid": "31"}"#, "pid"), Some(31));
    assert_eq!(peek_pid(r#"{"pid": 0}"#, "pid"), None);
    assert_eq!(peek_pid(r#"{"pid": -3}"#, "pid"), None);
    assert_eq!(peek_pid("[1]", "pid"), None);
    assert_eq!(peek_pid(r#"{"a": 1 "pid": 2}"#, "pid"), None);
    assert_eq!(peek_pid(REAL_SHAPED, "pid"), Some(424_242));
}

#[test]
fn round_trip_keeps_unknown_fields_and_order() {
    let state = State::parse(REAL_SHAPED).unwrap();
    let keys: Vec<_> = state.map().keys().cloned().collect();
    assert_eq!(keys[4], "zUnknownField");
    assert_eq!(keys.last().unwrap(), "aaa");
    let text = state.to_pretty();
    let again = State::parse(&text).unwrap();
    assert_eq!(state, again);
    assert!(
        text.contains("\n  \"pid\": 424242,\n"),
        "2-space indentation: {text}"
    );
    assert!(text.contains("0.4312"));
}

#[test]
fn update_changes_one_field_and_keeps_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".state.json");
    fs::write(&path, REAL_SHAPED).unwrap();
    update(&path, Write::per_call(soon()), |s| {
        s.push_unique("pendingPreloads", "/x.md")
    })
    .unwrap();
    let after = load(&path).unwrap();
    assert_eq!(after.strings("pendingPreloads"), vec!["/x.md"]);
    assert_eq!(
        after.get("zUnknownField"),
        State::parse(REAL_SHAPED).unwrap().get("zUnknownField")
    );
    assert!(!crate::primitives::lock::lock_dir_for(&path).exists());
}

#[test]
fn corrupt_files_are_never_written() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["{not json", "", "[1,2]", "\"text\""] {
        let path = tmp.path().join("bad.json");
        fs::write(&path, bad).unwrap();
        let err = update(&path, Write::per_call(soon()), |s| {
            s.set("x", Value::Bool(true));
        })
        .unwrap_err();
        assert!(matches!(err, StateError::Corrupt { .. }), "{bad:?}: {err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), bad);
        assert!(!crate::primitives::lock::lock_dir_for(&path).exists());
    }
}

#[test]
fn a_write_every_time_writes_whatever_the_change_and_refuses_what_any_update_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.json");
    fs::write(&path, "{\"a\":1}").unwrap();
    let out = update(&path, Write::durable(soon()).every_time(), |s| {
        s.get("a").cloned()
    })
    .unwrap();
    assert_eq!(out, Some(Value::from(1)));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\n  \"a\": 1\n}\n",
        "written in this product's layout though nothing changed"
    );
    update(&path, Write::durable(soon()).every_time(), |s| {
        s.set("b", Value::from("x"));
    })
    .unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\n  \"a\": 1,\n  \"b\": \"x\"\n}\n"
    );
    fs::write(&path, "{\"a\":").unwrap();
    assert!(
        update(&path, Write::durable(soon()).every_time(), |s| s
            .set("c", Value::Null))
        .is_err()
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"a\":",
        "a corrupt state is left"
    );
    let missing = tmp.path().join("none.json");
    assert!(update(&missing, Write::durable(soon()).every_time(), |_| ()).is_err());
    assert!(!missing.exists());
}

#[test]
fn unchanged_state_is_not_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.json");
    fs::write(&path, "{\"a\":1}").unwrap();
    update(&path, Write::per_call(soon()), |_| ()).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}");
    // Setting a field to what it holds marks nothing: another writer's layout stays.
    update(&path, Write::per_call(soon()), |s| {
        s.set("a", Value::from(1));
        assert!(!s.changed());
    })
    .unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}");
    // A change put back within the same update is marked: the state is written in this
    // product's layout, its content the same.
    update(&path, Write::per_call(soon()), |s| {
        s.set("a", Value::from(2));
        s.set("a", Value::from(1));
        assert!(s.changed());
    })
    .unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\n  \"a\": 1\n}\n");
    // A state this product laid out, unchanged, keeps its file (the same inode).
    update(&path, Write::per_call(soon()), |s| {
        s.set("b", Value::from("x"));
    })
    .unwrap();
    let ours = fs::read_to_string(&path).unwrap();
    assert_eq!(ours, "{\n  \"a\": 1,\n  \"b\": \"x\"\n}\n");
    let inode = inode_of(&path);
    update(&path, Write::per_call(soon()), |s| {
        s.set("b", Value::from("x"));
    })
    .unwrap();
    // Nor is a marked change put back: its text is the file's.
    update(&path, Write::per_call(soon()), |s| {
        s.array_mut("c").push(Value::from(1));
        s.remove("c");
        assert!(s.changed());
    })
    .unwrap();
    assert_untouched(&path, &ours, inode);
}

#[test]
fn create_if_absent_never_replaces() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("seed.json");
    let mut first = State::default();
    first.set("n", Value::from(1));
    assert!(create_if_absent(&path, &first, soon()).unwrap());
    let mut second = State::default();
    second.set("n", Value::from(2));
    assert!(!create_if_absent(&path, &second, soon()).unwrap());
    assert_eq!(load(&path).unwrap().number("n"), Some(1.0));
}

#[test]
fn atomic_write_does_not_follow_a_planted_temp_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("victim");
    fs::write(&target, "keep").unwrap();
    let path = tmp.path().join("s.json");
    // Plant symlinks at the next few temp names.
    let next = crate::primitives::file::next_temp_number();
    for n in next..next + 4 {
        let name = format!("s.json.tmp.{}.{n}", std::process::id());
        let _ = std::os::unix::fs::symlink(&target, tmp.path().join(name));
    }
    let _ = file::write_atomic(&path, b"{}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
}

#[test]
fn nothing_is_committed_after_the_call_deadline() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.json");
    fs::write(&path, "{\"pendingPreloads\": [\"/a.md\"]}").unwrap();
    commit_before(Some(Instant::now()));
    let late = update(&path, Write::per_call(soon()), |s| {
        s.remove_item("pendingPreloads", "/a.md")
    });
    commit_before(None);
    assert!(matches!(late, Err(StateError::Late { .. })), "{late:?}");
    assert_eq!(
        load(&path).unwrap().strings("pendingPreloads"),
        vec!["/a.md"]
    );
    assert!(!crate::primitives::lock::lock_dir_for(&path).exists());
    update(&path, Write::per_call(soon()), |s| {
        s.remove_item("pendingPreloads", "/a.md")
    })
    .unwrap();
    assert!(load(&path).unwrap().strings("pendingPreloads").is_empty());
}

proptest::proptest! {
    #[test]
    fn peeking_agrees_with_a_full_parse(
        keys in proptest::collection::vec("[a-z\"{}\\[\\],:\\\\]{0,6}", 0..8),
        pid in proptest::option::of(1u32..100_000),
        at in 0usize..8,
    ) {
        let mut map = Map::new();
        for (i, k) in keys.iter().enumerate() {
            map.insert(k.clone(), json!({"pid": i, "s": format!("{k}}}\"")}));
            if i == at {
                if let Some(pid) = pid { map.insert("pid".into(), json!(pid)); }
            }
        }
        if keys.is_empty() {
            if let Some(pid) = pid { map.insert("pid".into(), json!(pid)); }
        }
        let state = State::from_map(map);
        for text in [state.to_pretty(), serde_json::to_string(state.map()).unwrap()] {
            proptest::prop_assert_eq!(peek_pid(&text, "pid"), state.pid("pid"));
        }
    }


    #[test]
    fn any_object_round_trips(keys in proptest::collection::vec("[a-zA-Z_]{1,8}", 0..12), n in 0i64..1000) {
        let mut state = State::default();
        for (i, k) in keys.iter().enumerate() {
            state.set(k, Value::from(n + i64::try_from(i).unwrap()));
        }
        let again = State::parse(&state.to_pretty()).unwrap();
        proptest::prop_assert_eq!(state, again);
    }
}

#[test]
fn a_known_outcome_stands_only_while_the_file_is_what_was_read() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.json");
    fs::write(&path, "{\"n\": 1}").unwrap();
    let read = load_read(&path).unwrap();
    let decided = |n: i64| {
        let mut s = read.state.clone();
        s.set("n", Value::from(n));
        s
    };
    // Unchanged since the read: the known outcome is written, `change` never runs.
    let out = update(
        &path,
        Write::per_call(soon()).from_read(&read.text, || Some((decided(2), "known"))),
        |_| unreachable!("the file is what was read"),
    )
    .unwrap();
    assert_eq!(
        (out, load(&path).unwrap().number("n")),
        ("known", Some(2.0))
    );
    // Changed since: `change` decides on what the lock finds.
    fs::write(&path, "{\"n\": 5, \"other\": true}").unwrap();
    let out = update(
        &path,
        Write::per_call(soon()).from_read(&read.text, || Some((decided(3), "known"))),
        |s| {
            let n = s.number("n").unwrap_or(0.0);
            s.set("n", Value::from(n + 1.0));
            "changed"
        },
    )
    .unwrap();
    let now = load(&path).unwrap();
    assert_eq!(out, "changed");
    assert_eq!((now.number("n"), now.flag("other")), (Some(6.0), true));
    // A known outcome that renders as the file reads is no write.
    let read = load_read(&path).unwrap();
    let inode = inode_of(&path);
    let same = read.state.clone();
    update(
        &path,
        Write::per_call(soon()).from_read(&read.text, || Some((same, ()))),
        |_| (),
    )
    .unwrap();
    assert_untouched(&path, &read.text, inode);
}

#[test]
fn only_a_durable_write_is_synced() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.json");
    let syncs = file::syncs_on_this_thread;
    let before = syncs();
    save(&path, &State::default(), Durability::PerCall).unwrap();
    update(&path, Write::per_call(soon()), |s| s.set("a", json!(1))).unwrap();
    assert_eq!(syncs(), before);
    assert_eq!(load(&path).unwrap().get("a"), Some(&json!(1)));
    update(&path, Write::durable(soon()), |s| s.set("a", json!(2))).unwrap();
    assert_eq!(syncs(), before + 1);
    update(&path, Write::durable(soon()).every_time(), |s| {
        s.set("a", json!(3));
    })
    .unwrap();
    assert_eq!(syncs(), before + 2, "a re-seed is durable");
}

fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (0u8..4).prop_map(Value::from),
        "[ab/]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::vec(("[ab]{1,2}", inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Keys typed and untyped: the typed fields' names, and a few others.
fn any_key() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        "[abc]{1,2}",
        proptest::sample::select(vec![
            "lifecycle",
            "currentPhase",
            "phases",
            "preloadedFiles",
            "pendingPreloads",
            "preloadedFiles_sub:a1",
            "pendingPreloads_sub:a1",
        ])
        .prop_map(str::to_owned),
    ]
}

proptest::proptest! {
    /// A state equals another exactly when their JSON objects do, whatever the key order and
    /// whether their fields are typed.
    #[test]
    fn states_are_equal_as_their_objects_are(
        a in proptest::collection::vec((any_key(), json_value()), 0..6),
        b in proptest::collection::vec((any_key(), json_value()), 0..6),
    ) {
        let x: Map<String, Value> = a.into_iter().collect();
        let y: Map<String, Value> = b.into_iter().collect();
        let reversed: Map<String, Value> =
            x.iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
        proptest::prop_assert_eq!(State::from_map(x.clone()) == State::from_map(y.clone()), x == y);
        proptest::prop_assert!(State::from_map(x.clone()) == State::from_map(reversed));
        proptest::prop_assert!(State::from_map(x.clone()) == State::from_map(x));
    }

    /// Whatever the shapes of its fields, typed or not, a document reads back as the object it
    /// is, in its order, and writes the text `serde_json` writes of it.
    #[test]
    fn a_document_is_written_as_it_was_read(
        pairs in proptest::collection::vec((any_key(), json_value()), 0..8),
    ) {
        let map: Map<String, Value> = pairs.into_iter().collect();
        let expected = serde_json::to_string_pretty(&map).unwrap() + "\n";
        let state = State::parse(&expected).unwrap();
        proptest::prop_assert_eq!(&state.to_pretty(), &expected);
        let fields: Vec<(String, Value)> =
            state.fields().map(|(k, f)| (k.to_owned(), f.to_value())).collect();
        let keys: Vec<&str> = state.keys().collect();
        proptest::prop_assert_eq!(keys, map.keys().map(String::as_str).collect::<Vec<_>>());
        proptest::prop_assert_eq!(fields, map.clone().into_iter().collect::<Vec<_>>());
        for (key, value) in &map {
            proptest::prop_assert!(state.field(key).is_some_and(|f| f.is(value)), "{}", key);
        }
        proptest::prop_assert_eq!(state.to_map(), map);
    }

    /// Setting and removing fields, typed or not, leaves the document a map of JSON would be.
    #[test]
    fn changes_keep_the_document_a_map_of_json_would_be(
        start in proptest::collection::vec((any_key(), json_value()), 0..6),
        changes in proptest::collection::vec(
            (any_key(), proptest::option::of(json_value())),
            0..8,
        ),
    ) {
        let mut map: Map<String, Value> = start.into_iter().collect();
        let mut state = State::from_map(map.clone());
        for (key, value) in changes {
            match value {
                Some(value) => {
                    state.set(&key, value.clone());
                    map.insert(key, value);
                }
                None => {
                    proptest::prop_assert_eq!(state.remove(&key), map.shift_remove(&key));
                }
            }
        }
        let expected = serde_json::to_string_pretty(&map).unwrap() + "\n";
        proptest::prop_assert_eq!(state.to_pretty(), expected);
    }
}

#[test]
fn the_product_s_fields_are_typed_and_every_other_is_kept_in_its_place() {
    let mut s = State::parse(REAL_SHAPED).unwrap();
    assert_eq!(s.lifecycle(), Some(Lifecycle::Active));
    assert_eq!(s.current_phase().map(Phase::label), Some("0"));
    assert_eq!(
        s.path_list(IN_CONTEXT),
        ["/h/.claude/engine/.directives/COMMANDS.md"]
    );
    assert!(s.path_list(QUEUED).is_empty());
    // Typed fields are no JSON values to the untyped readers; every reader of a field by its
    // name (the rules' `$field`, a discovery trigger) reads them through `field`.
    assert_eq!(s.str(fields::LIFECYCLE), Some("active"));
    assert_eq!(s.field("preloadedFiles").map(Field::entries), Some(1));
    assert_eq!(s.items("preloadedFiles").len(), 1);
    s.set_lifecycle(&Lifecycle::Unknown("paused".into()));
    s.set_paths(QUEUED, ["/q"]);
    let text = s.to_pretty();
    let order: Vec<String> = State::parse(&text)
        .unwrap()
        .keys()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        order,
        [
            "pid",
            "skill",
            "lifecycle",
            "loading",
            "zUnknownField",
            "currentPhase",
            "toolUseWithoutLogsWarnAfter",
            "preloadedFiles",
            "touchedDirs",
            "pendingPreloads",
            "contextUsage",
            "aaa",
        ],
        "each field where it was"
    );
    assert!(text.contains("\"lifecycle\": \"paused\""), "{text}");
    assert!(
        text.contains("\"pendingPreloads\": [\n    \"/q\"\n  ]"),
        "{text}"
    );
}

#[test]
fn a_typed_field_of_another_shape_is_kept_as_written_until_it_is_set() {
    let text = "{\n  \"lifecycle\": 5,\n  \"currentPhase\": null,\n  \"phases\": {},\n  \"pendingPreloads\": \"oops\"\n}\n";
    let mut s = State::parse(text).unwrap();
    assert_eq!(
        s.lifecycle(),
        None,
        "read as absent, as the engine's hooks read it"
    );
    assert_eq!(s.current_phase(), None);
    assert!(s.phases().is_empty() && s.path_list(QUEUED).is_empty());
    assert_eq!(s.to_pretty(), text, "written back as it was");
    assert!(
        s.add_path(QUEUED, "/a"),
        "a list of another shape is started afresh"
    );
    s.set_lifecycle(&Lifecycle::Idle);
    assert_eq!(s.lifecycle(), Some(Lifecycle::Idle));
    assert_eq!(
        s.to_pretty(),
        "{\n  \"lifecycle\": \"idle\",\n  \"currentPhase\": null,\n  \"phases\": {},\n  \"pendingPreloads\": [\n    \"/a\"\n  ]\n}\n"
    );
    assert_eq!(s.remove(fields::LIFECYCLE), Some(json!("idle")));
    assert_eq!(s.remove("phases"), Some(json!({})));
    assert_eq!(s.lifecycle(), None);
    assert_eq!(
        s.keys().collect::<Vec<_>>(),
        ["currentPhase", "pendingPreloads"]
    );
}

#[test]
fn parameters_merge_into_typed_and_untyped_fields_as_jq_merges_them() {
    let mut s = State::parse(r#"{"o": {"a": 1, "b": {"c": 2}}, "lifecycle": "active"}"#).unwrap();
    let params = json!({"o": {"b": {"d": 3}}, "lifecycle": "idle", "phases": [{"label": "0"}]});
    s.merge(params.as_object().unwrap());
    assert!(s.changed());
    assert_eq!(s.lifecycle(), Some(Lifecycle::Idle));
    assert_eq!(s.phases().items().len(), 1);
    assert_eq!(s.get("o"), Some(&json!({"a": 1, "b": {"c": 2, "d": 3}})));
}

#[test]
fn only_a_change_or_a_mutable_borrow_marks_the_state() {
    let mut s = State::parse(r#"{"a":1,"list":["x"],"o":{"k":true}}"#).unwrap();
    assert!(!s.changed(), "as loaded");
    s.set("a", Value::from(1));
    assert!(s.remove("none").is_none());
    assert!(!s.push_unique("list", "x"));
    assert!(!s.remove_item("list", "y"));
    assert!(s.value_mut("none").is_none());
    assert!(!s.changed(), "no change");
    for change in [
        (|s: &mut State| s.set("a", Value::from(2))) as fn(&mut State),
        |s| drop(s.remove("a")),
        |s| assert!(s.push_unique("list", "y")),
        |s| assert!(s.remove_item("list", "x")),
        |s| assert!(s.value_mut("o").is_some()),
        |s| assert!(!s.array_mut("list").is_empty()),
        |s| assert!(!s.object_mut("o").is_empty()),
        |s| s.insert_first("z", Value::Null),
        |s| s.remove_where(|k| k == "a"),
    ] {
        let mut copy = s.clone();
        change(&mut copy);
        assert!(copy.changed());
        copy.mark_unchanged();
        assert!(!copy.changed());
    }
}

#[test]
fn scalar_fields_are_set_in_their_places_and_read_as_jq_reads_them() {
    let mut s = State::parse(r#"{"a": 1, "skill": "x", "n": "7", "bad": 2.5}"#).unwrap();
    s.set_text(fields::SKILL, "implement");
    s.set_count("a", 3);
    s.set_strings("list", &["p".to_owned(), "q".to_owned()]);
    assert_eq!(
        s.to_pretty(),
        "{\n  \"a\": 3,\n  \"skill\": \"implement\",\n  \"n\": \"7\",\n  \"bad\": 2.5,\n  \"list\": [\n    \"p\",\n    \"q\"\n  ]\n}\n"
    );
    assert_eq!(s.count("a"), Some(3));
    assert_eq!(s.count("n"), Some(7), "a string of a whole number");
    assert_eq!(s.count("bad"), None, "a fraction is no count");
    assert_eq!(s.count("skill"), None);
    assert_eq!(s.count("missing"), None);
    let mut same = s.clone();
    same.mark_unchanged();
    same.set_count("a", 3);
    assert!(
        !same.changed(),
        "setting what a field holds changes nothing"
    );
}
