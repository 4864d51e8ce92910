//! Unit tests of `ledger`.

use super::window::new_context_window;
use super::*;
use crate::state::testing::state;
use serde_json::{Value, json};

#[test]
fn a_seed_keeps_only_what_the_engine_reads() {
    let view = state(json!({
        "pid": 5, "lifecycle": "seeding", "preloadedFiles": ["/a"], "pendingPreloads": ["/b"],
        "touchedDirs": {}, "preloadParts": {"/c": 2}, "pendingAllowInjections": [{"content": "x"}],
        "sessionId": "conv"
    }));
    let (seed, carry) = split(&view);
    assert_eq!(
        seed.map().keys().collect::<Vec<_>>(),
        [
            "pid",
            "lifecycle",
            "preloadedFiles",
            "pendingPreloads",
            "touchedDirs"
        ]
    );
    let carry = carry.unwrap();
    assert_eq!(carry.strings(fields::OWED), ["/b", "/c"]);
    assert_eq!(carry.str("sessionId"), Some("conv"));
    assert_eq!(carry.pid("pid"), Some(5));
    let back = joined(&seed, Some(&carry));
    assert_eq!(back.get("preloadParts"), view.get("preloadParts"));
    assert!(back.get(fields::OWED).is_none());
}

#[test]
fn adoption_puts_owed_files_back_in_the_queue() {
    // The engine's fresh state lists the six standards as delivered; two never went out.
    let mut s = state(json!({
        "pid": 5, "preloadedFiles": ["/std/COMMANDS.md", "/std/SIGILS.md", "/std/INVARIANTS.md"],
        "pendingPreloads": ["/std/SIGILS.md"]
    }));
    let carry = state(json!({
        "pid": 5, "owed": ["/std/SIGILS.md", "/std/INVARIANTS.md"],
        "preloadParts": {"/std/INVARIANTS.md": 1},
        "pendingAllowInjections": [{"ruleId": "preload", "content": "[Preloaded: /d.md]\nd", "agentId": ""}],
        "sessionId": "conv", "injectedRules": {"synthesis-commands": true}
    }));
    adopt(&mut s, None, Some(&carry));
    assert_eq!(s.path_list(IN_CONTEXT), ["/std/COMMANDS.md"]);
    assert_eq!(
        s.path_list(QUEUED),
        ["/std/SIGILS.md", "/std/INVARIANTS.md"]
    );
    assert_eq!(
        s.get(fields::PRELOAD_PARTS),
        Some(&json!({"/std/INVARIANTS.md": 1}))
    );
    assert_eq!(
        s.get(fields::STASH).and_then(Value::as_array).map(Vec::len),
        Some(1)
    );
    assert_eq!(s.str("sessionId"), Some("conv"));
    assert_eq!(
        s.get(fields::INJECTED_RULES),
        Some(&json!({"synthesis-commands": true}))
    );
}

#[test]
fn a_carry_adopted_by_the_window_it_came_from_adds_no_stash_entry_twice() {
    let entry = json!({"agentId": "", "content": "[Preloaded: /s.md]\nx"});
    let mut s = state(json!({"pendingAllowInjections": [entry.clone()]}));
    let carry =
        state(json!({"pendingAllowInjections": [entry.clone(), {"agentId": "", "content": "y"}]}));
    adopt(&mut s, None, Some(&carry));
    assert_eq!(
        s.get(fields::STASH),
        Some(&json!([entry, {"agentId": "", "content": "y"}]))
    );
}

#[test]
fn another_conversation_lets_the_old_window_go() {
    let mut s = state(json!({
        "sessionId": "old", "preloadedFiles": ["/kept"], "preloadParts": {"/big": 3},
        "preloadedFiles_sub:a1": ["/x"],
        "pendingAllowInjections": [
            {"ruleId": "preload", "content": "[Preloaded: /stashed.md]\nbody", "agentId": ""},
            {"ruleId": "heartbeat-warn", "content": "[warn: heartbeat]", "agentId": ""}
        ]
    }));
    new_context_window(&mut s);
    assert!(s.get(fields::PRELOAD_PARTS).is_none() && s.field("preloadedFiles_sub:a1").is_none());
    assert_eq!(s.path_list(QUEUED), ["/stashed.md"]);
    assert_eq!(s.get(fields::STASH), Some(&json!([])));
    assert_eq!(s.path_list(IN_CONTEXT), ["/kept"]);
}

#[test]
fn a_seed_file_that_would_not_change_is_not_written_again() {
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let seed_file = dir.path().join("5.json");
    let carry_file = carry_path(&seed_file);
    let inode = |path: &Path| fs::metadata(path).unwrap().ino();
    let lock = StateLock::acquire(&seed_file, Instant::now() + Duration::from_secs(2)).unwrap();
    let first = state(json!({
        "pid": 5, "lifecycle": "seeding", "preloadedFiles": ["/a"], "sessionId": "one"
    }));
    write_seed(&lock, &seed_file, &first, None, None, Durability::Durable).unwrap();
    let (seed_ino, carry_ino) = (inode(&seed_file), inode(&carry_file));

    // A new conversation: only the carry's sessionId differs.
    let (old_seed, old_carry) = read_seed_parts(&seed_file).unwrap();
    let mut second = first.clone();
    second.set("sessionId", json!("two"));
    write_seed(
        &lock,
        &seed_file,
        &second,
        old_seed.as_ref(),
        old_carry.as_ref(),
        Durability::Durable,
    )
    .unwrap();
    assert_eq!(
        inode(&seed_file),
        seed_ino,
        "the unchanged seed was rewritten"
    );
    assert_ne!(
        inode(&carry_file),
        carry_ino,
        "the changed carry was not written"
    );
    assert_eq!(read_seed(&seed_file).unwrap(), second);

    // A changed seed is written.
    let (old_seed, old_carry) = read_seed_parts(&seed_file).unwrap();
    let carry_ino = inode(&carry_file);
    let mut third = second.clone();
    third.set_paths(IN_CONTEXT, ["/a", "/b"]);
    write_seed(
        &lock,
        &seed_file,
        &third,
        old_seed.as_ref(),
        old_carry.as_ref(),
        Durability::Durable,
    )
    .unwrap();
    assert_ne!(
        inode(&seed_file),
        seed_ino,
        "the changed seed was not written"
    );
    assert_eq!(
        inode(&carry_file),
        carry_ino,
        "the unchanged carry was rewritten"
    );
    assert_eq!(read_seed(&seed_file).unwrap(), third);
    lock.release();
}

/// The call `call` carried the one file `file`, in `text`.
fn delivered(s: &mut State, call: &str, file: &str, text: &str) {
    note_call_deliveries(s, Some(call), &[file.to_owned()], text);
}

/// The calls a compaction keeps, by what the client's transcript says.
#[test]
fn a_compaction_keeps_the_latest_responses_calls_even_from_a_transcript_written_behind() {
    let calls = |latest: &[&str], seen: &[&str]| crate::primitives::transcript::Calls {
        latest: latest.iter().map(|c| (*c).to_owned()).collect(),
        seen: seen.iter().map(|c| (*c).to_owned()).collect(),
    };
    let mut s = State::default();
    delivered(&mut s, "A", "/a", "[Preloaded: /a]\nx\n");
    delivered(&mut s, "B", "/b", "[Preloaded: /b]\ny\n");
    delivered(&mut s, "C", "/c", "[Preloaded: /c]\nz\n");
    let kept = |s: &State, c: Option<&crate::primitives::transcript::Calls>| {
        KeptCall::of(s, c, crate::primitives::env::Agent::ClaudeCode).files
    };
    // B and C answered one response, and the transcript says so.
    assert_eq!(
        kept(&s, Some(&calls(&["C", "B"], &["A", "B", "C"]))),
        ["/b", "/c"]
    );
    // The transcript holds A's response only so far: the calls after it are the latest.
    assert_eq!(kept(&s, Some(&calls(&["A"], &["A"]))), ["/b", "/c"]);
    // No transcript: the latest call alone.
    assert_eq!(kept(&s, None), ["/c"]);
    // A later call D carried nothing: the transcript that names it keeps nothing of the others,
    // and one that does not name it yet keeps what came after what it names (nothing here).
    note_call_deliveries(&mut s, Some("D"), &[], "");
    assert!(kept(&s, Some(&calls(&["D"], &["A", "B", "C", "D"]))).is_empty());
    assert!(kept(&s, Some(&calls(&["C", "B"], &["A", "B", "C"]))).is_empty());
    assert!(kept(&s, None).is_empty());
}

/// The Codex CLI's compaction replaces the whole history with its summary: no call is kept,
/// so what the latest call carried goes out again in the new window.
#[test]
fn a_codex_compaction_keeps_no_call() {
    use crate::primitives::env::Agent;
    let mut s = State::default();
    delivered(&mut s, "call_1", "/a", "[Preloaded: /a]\nx\n");
    assert_eq!(KeptCall::of(&s, None, Agent::ClaudeCode).files, ["/a"]);
    assert!(KeptCall::of(&s, None, Agent::Codex).files.is_empty());
}

/// A kept call that carried a file's first parts puts the window's progress back with the cut
/// those parts were of (a later change of the file's cut then starts it again); a record
/// written before it said the cut puts back the progress alone.
#[test]
fn a_kept_calls_first_parts_come_back_with_their_cut() {
    use crate::primitives::env::Agent;
    for (begun, cut) in [(json!([1, 2]), Some(json!(2))), (json!(1), None)] {
        let s = state(json!({
            "callDeliveries": [{"toolUseId": "call_1", "files": [], "parts": {"/a": begun}}]
        }));
        let mut window = State::default();
        KeptCall::of(&s, None, Agent::ClaudeCode).carry_into(&mut window);
        assert_eq!(window.get(fields::PRELOAD_PARTS), Some(&json!({"/a": 1})));
        assert_eq!(
            window
                .get(fields::PRELOAD_PARTS_CUT)
                .and_then(|c| c.get("/a")),
            cut.as_ref()
        );
        assert!(window.has_path(QUEUED, "/a"));
    }
    // A call that carries part 1 of 2 while the window's progress says so records both.
    let mut s = state(json!({"preloadParts": {"/a": 1}}));
    delivered(&mut s, "call_2", "/a", "[Preloaded: /a (part 1/2)]\nx\n");
    let record = &s.get(fields::CALL_DELIVERIES).unwrap()[0];
    assert_eq!(record.get(fields::CALL_PARTS), Some(&json!({"/a": [1, 2]})));
}

#[test]
fn the_sweep_retires_the_seeds_of_processes_gone_without_a_session_end() {
    use crate::mechanisms::session::{ended_path, seed_path};
    use crate::primitives::process;
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    fs::create_dir_all(sessions.join(session::SEEDS_DIR)).unwrap();
    let write = |path: &Path, value: Value| fs::write(path, value.to_string()).unwrap();
    // Killed with its conversation in the carry: one record of both for a later --resume.
    let killed = seed_path(&sessions, 4_000_000);
    write(
        &killed,
        json!({"pid": 4_000_000, "lifecycle": "seeding", "preloadedFiles": ["/a"]}),
    );
    write(
        &carry_path(&killed),
        json!({"pid": 4_000_000, "sessionId": "conv-1", "preloadParts": {"/b": 1}}),
    );
    // Dead before it knew its conversation: nothing to resume.
    let unnamed = seed_path(&sessions, 4_000_001);
    write(
        &unnamed,
        json!({"pid": 4_000_001, "preloadedFiles": ["/a"]}),
    );
    // An earlier process with this PID.
    let me = std::process::id();
    let reused = seed_path(&sessions, me);
    let wrong_start = process::start_time(me).unwrap() + 7;
    write(&reused, json!({"pid": me, "pidStartTime": wrong_start}));
    // A live process's seed, and the carry a dead one's activator left without its seed.
    let parent = std::os::unix::process::parent_id();
    let live = seed_path(&sessions, parent);
    write(&live, json!({"pid": parent}));
    let orphan = carry_path(&seed_path(&sessions, 4_000_002));
    write(&orphan, json!({"pid": 4_000_002, "sessionId": "conv-2"}));

    let deadline = Instant::now() + Duration::from_secs(2);
    assert_eq!(sweep_seeds(&sessions, deadline), 3);
    for gone in [&killed, &carry_path(&killed), &unnamed, &reused, &orphan] {
        assert!(!gone.exists(), "{}", gone.display());
    }
    assert!(live.exists());
    let records: Vec<_> = fs::read_dir(sessions.join(session::SEEDS_DIR))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(session::ENDED_SUFFIX))
        .collect();
    assert_eq!(records, ["4000000.conv-1.ended.json"]);
    let record = state::load(&ended_path(&killed, "conv-1")).unwrap();
    assert_eq!(record.str(fields::SESSION_ID), Some("conv-1"));
    assert_eq!(record.path_list(IN_CONTEXT), ["/a"]);
    assert_eq!(record.get(fields::PRELOAD_PARTS), Some(&json!({"/b": 1})));
    // A record is kept for a later sweep (its age, not its PID, says when it goes).
    assert_eq!(sweep_seeds(&sessions, deadline), 0);
    assert!(ended_path(&killed, "conv-1").exists());
}
