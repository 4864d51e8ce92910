//! Unit tests of `session`.

use serde_json::json;

use super::*;
use crate::primitives::env::{self, Env};
use crate::primitives::input::HookInput;
use crate::state::Lifecycle;
use std::time::Duration;

/// A call with the input `input` of a process under supervisor `pid`, with `home` and the
/// session cache in `cache`.
fn ctx_of(home: &Path, pid: u32, cache: &Path, input: serde_json::Value) -> Context {
    let env = Env::from_pairs([
        (env::HOME, home.to_string_lossy().into_owned()),
        (env::CLAUDE_SUPERVISOR_PID, pid.to_string()),
        (
            env::CLAUDE_SESSION_CACHE_DIR,
            cache.to_string_lossy().into_owned(),
        ),
    ]);
    Context::new(
        env,
        "test",
        &HookInput::from_value(input),
        Duration::from_secs(2),
    )
}

/// [`ctx_of`] for a call in `project`.
fn ctx_in(project: &Path, home: &Path, pid: u32, cache: &Path) -> Context {
    ctx_of(home, pid, cache, json!({"cwd": project}))
}

/// [`ctx_in`] for a call of the conversation `id`.
fn ctx_in_conversation(project: &Path, home: &Path, pid: u32, cache: &Path, id: &str) -> Context {
    ctx_of(home, pid, cache, json!({"cwd": project, "session_id": id}))
}

fn project() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    fs::create_dir_all(project.join(".claude")).unwrap();
    fs::create_dir_all(project.join("sessions")).unwrap();
    let home = tmp.path().join("home");
    fs::create_dir_all(&home).unwrap();
    (tmp, project, home)
}

/// The session `name` of `project`, its state `body`; its directory.
fn write_state(project: &Path, name: &str, body: &str) -> PathBuf {
    let dir = project.join("sessions").join(name);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(STATE_FILE), body).unwrap();
    dir
}

#[test]
fn finds_the_owners_session_and_caches_it() {
    let (tmp, project, home) = project();
    for (name, pid) in [("a", 11), ("b", 22)] {
        let body = format!("{{\"pid\": {pid}, \"lifecycle\": \"active\"}}");
        write_state(&project, name, &body);
    }
    let ctx = ctx_in(&project, &home, 22, tmp.path());
    assert_eq!(find_session(&ctx), Some(project.join("sessions/b")));
    let cached = fs::read_to_string(cache_file(&ctx)).unwrap();
    assert_eq!(cached.trim(), project.join("sessions/b").to_string_lossy());
    let other = ctx_in(&project, &home, 33, tmp.path());
    assert_eq!(find_session(&other), None);
}

#[test]
fn pid_beats_last_known_pid_and_a_live_owner_keeps_its_session() {
    let (tmp, project, home) = project();
    let live = std::os::unix::process::parent_id();
    let write = |name: &str, body: String| write_state(&project, name, &body);
    write("a", format!("{{\"pid\": {live}, \"lastKnownPid\": 55}}"));
    write("b", "{\"pid\": 4000000, \"lastKnownPid\": 55}".into());
    write("c", "{\"pid\": 4000001, \"lastKnownPid\": 55}".into());
    let ctx = ctx_in(&project, &home, 55, tmp.path());
    assert_eq!(
        find_session(&ctx),
        Some(project.join("sessions/b")),
        "a: owned by a live process; b: the first with a dead owner"
    );
    fs::remove_file(cache_file(&ctx)).unwrap();
    write("d", "{\"pid\": 55}".into());
    assert_eq!(find_session(&ctx), Some(project.join("sessions/d")));
}

fn fleet_script(home: &Path, pane: &str) {
    use std::os::unix::fs::PermissionsExt;
    let scripts = home.join(".claude/scripts");
    fs::create_dir_all(&scripts).unwrap();
    let script = scripts.join("fleet.sh");
    fs::write(
        &script,
        format!("#!/bin/sh\n[ \"$1\" = pane-id ] && echo '{pane}'\nexit 0\n"),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn the_fleet_panes_session_wins_among_the_owners() {
    let (tmp, project, home) = project();
    let write = |name: &str, body: &str| write_state(&project, name, body);
    write(
        "a_implement",
        "{\"pid\": 66, \"fleetPaneId\": \"fleet:w:other\"}",
    );
    write(
        "b_analyze",
        "{\"pid\": 66, \"fleetPaneId\": \"fleet:w:mine\"}",
    );
    fleet_script(&home, "fleet:w:mine");
    let ctx = ctx_in(&project, &home, 66, tmp.path());
    assert_eq!(find_session(&ctx), Some(project.join("sessions/b_analyze")));
    // The pane's session held by another live process is not ours: no session at all, as
    // in `session.sh find`.
    fs::remove_file(cache_file(&ctx)).unwrap();
    let live = std::os::unix::process::parent_id();
    write(
        "b_analyze",
        &format!("{{\"pid\": {live}, \"fleetPaneId\": \"fleet:w:mine\"}}"),
    );
    assert_eq!(find_session(&ctx), None);
}

#[test]
fn a_conversation_back_in_a_new_process_takes_its_session_over() {
    let (tmp, project, home) = project();
    let dir = write_state(
        &project,
        "s",
        "{\"pid\": 4000000, \"skill\": \"implement\", \"sessionId\": \"conv-1\"}",
    );
    let ctx = ctx_in_conversation(&project, &home, 77, tmp.path(), "conv-2");
    assert_eq!(find_session(&ctx), None, "another conversation");
    let ctx = ctx_in_conversation(&project, &home, 77, tmp.path(), "conv-1");
    assert_eq!(find_session(&ctx), Some(dir.clone()));
    let taken = state::load(&dir.join(STATE_FILE)).unwrap();
    assert_eq!(taken.pid("pid"), Some(77));
    assert_eq!(taken.pid("lastKnownPid"), Some(4_000_000));
    assert_eq!(
        taken.str("skill"),
        Some("implement"),
        "nothing else changed"
    );
}

/// Process 44 in a project whose one session, `a`, process 99 owns: the project, the
/// session's directory and the call's context.
fn in_anothers_session() -> (tempfile::TempDir, PathBuf, PathBuf, Context) {
    let (tmp, project, home) = project();
    let dir = write_state(&project, "a", "{\"pid\": 99}");
    let ctx = ctx_in(&project, &home, 44, tmp.path());
    (tmp, project, dir, ctx)
}

#[test]
fn a_remembered_no_session_answer_does_not_outlive_a_session_the_owner_held() {
    let (_tmp, _, dir, ctx) = in_anothers_session();
    assert_eq!(find_session(&ctx), None);
    // The engine's activate of the existing directory: the PID cache, the owner's PID.
    fs::write(
        dir.join(STATE_FILE),
        "{\"pid\": 44, \"lifecycle\": \"active\"}",
    )
    .unwrap();
    fs::write(cache_file(&ctx), format!("{}\n", dir.display())).unwrap();
    assert_eq!(find_session(&ctx), Some(dir.clone()));
    assert!(!no_session_file(&ctx).is_file());
    // Its `idle`: the PID cache removed, the owner kept as `lastKnownPid`. The sessions
    // directories are as they were when nothing was found.
    fs::write(
        dir.join(STATE_FILE),
        "{\"lastKnownPid\": 44, \"lifecycle\": \"idle\"}",
    )
    .unwrap();
    fs::remove_file(cache_file(&ctx)).unwrap();
    assert_eq!(find_session(&ctx), Some(dir));
}

#[test]
fn no_session_is_remembered_until_an_activation() {
    let (_tmp, project, dir, ctx) = in_anothers_session();
    assert_eq!(find_session(&ctx), None);
    assert!(no_session_file(&ctx).is_file());
    // The remembered answer stands without reading the states: an edit that no activation
    // makes (no PID cache written, no new session directory) is not seen.
    fs::write(dir.join(STATE_FILE), "{\"pid\": 44}").unwrap();
    assert_eq!(find_session(&ctx), None);
    // An activation writes the PID cache: found at once.
    fs::write(cache_file(&ctx), format!("{}\n", dir.display())).unwrap();
    assert_eq!(find_session(&ctx), Some(dir.clone()));
    // A new session directory is seen too.
    fs::write(dir.join(STATE_FILE), "{\"pid\": 99}").unwrap();
    fs::remove_file(cache_file(&ctx)).unwrap();
    assert_eq!(find_session(&ctx), None);
    let fresh = write_state(&project, "b", "{\"pid\": 44}");
    assert_eq!(find_session(&ctx), Some(fresh));
}

#[test]
fn a_stale_cache_entry_is_not_trusted() {
    let (_tmp, _, dir, ctx) = in_anothers_session();
    fs::write(cache_file(&ctx), format!("{}\n", dir.display())).unwrap();
    assert_eq!(find_session(&ctx), None);
}

#[test]
fn preload_state_falls_back_to_a_created_seed() {
    let (tmp, project, home) = project();
    let ctx = ctx_in(&project, &home, std::process::id(), tmp.path());
    let found = find_preload_state(&ctx).unwrap().unwrap();
    assert!(!found.is_session);
    assert_eq!(
        found.path,
        project
            .join("sessions/.seeds")
            .join(format!("{}.json", std::process::id()))
    );
    let seed = state::load(&found.path).unwrap();
    assert_eq!(seed.lifecycle(), Some(Lifecycle::Seeding));
    assert_eq!(seed.strings("preloadedFiles").len(), 6);
    assert!(!seed_is_stale(&found.path));
}

#[test]
fn no_sessions_dir_means_no_state() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("p");
    fs::create_dir_all(project.join(".claude")).unwrap();
    let ctx = ctx_in(&project, tmp.path(), 7, tmp.path());
    assert_eq!(find_preload_state(&ctx).unwrap(), None);
}

#[test]
fn the_index_answers_a_conversation_and_is_checked_on_every_use() {
    let (tmp, project, home) = project();
    // Two sessions once ran conversation c-9: a scan finds the first by name, the index the
    // one our writers last tagged.
    let first = write_state(
        &project,
        "2026_a",
        "{\"pid\": 4000000, \"sessionId\": \"c-9\"}",
    );
    let tagged = write_state(
        &project,
        "2026_b",
        "{\"pid\": 4000001, \"sessionId\": \"c-9\"}",
    );
    for i in 0..20 {
        write_state(
            &project,
            &format!("2026_x{i:02}"),
            &format!("{{\"pid\": {}}}", 4_100_000 + i),
        );
    }
    let ctx = ctx_in(&project, &home, 88, tmp.path());
    let scanned = find_conversation(&ctx, "c-9").unwrap();
    assert_eq!(
        scanned.path,
        first.join(STATE_FILE),
        "a miss scans, in name order"
    );
    note(&tagged, &[Key::Conversation("c-9")]);
    let indexed = find_conversation(&ctx, "c-9").unwrap();
    assert_eq!(
        indexed.path,
        tagged.join(STATE_FILE),
        "a hit comes from the index"
    );
    // A hit is checked against the state it names: once it no longer holds the conversation,
    // the index is not believed.
    fs::write(
        tagged.join(STATE_FILE),
        "{\"pid\": 4000001, \"sessionId\": \"c-10\"}",
    )
    .unwrap();
    assert_eq!(
        find_conversation(&ctx, "c-9").unwrap().path,
        first.join(STATE_FILE)
    );
    // A bucket that does not parse is a miss; the scan rebuilds it.
    let sessions = project.join("sessions");
    for entry in fs::read_dir(sessions.join(".preload-index")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            fs::write(&path, "{torn").unwrap();
        }
    }
    assert_eq!(
        find_conversation(&ctx, "c-10").unwrap().path,
        tagged.join(STATE_FILE)
    );
    assert_eq!(
        index::lookup(&sessions, Key::Conversation("c-10")),
        Some(tagged.clone()),
        "rebuilt"
    );
}

#[test]
fn an_owner_whose_pid_cache_is_gone_is_found_through_the_index() {
    let (tmp, project, home) = project();
    for i in 0..30 {
        write_state(
            &project,
            &format!("2026_{i:02}"),
            &format!("{{\"pid\": {}}}", 4_100_000 + i),
        );
    }
    // The engine's `idle` keeps the owner as lastKnownPid and deletes its PID cache.
    let idle = write_state(
        &project,
        "2026_99_idle",
        "{\"lastKnownPid\": 91, \"lifecycle\": \"idle\"}",
    );
    let ctx = ctx_in(&project, &home, 91, tmp.path());
    assert_eq!(find_session(&ctx), Some(idle.clone()), "found by a scan");
    fs::remove_file(cache_file(&ctx)).unwrap();
    // Answered from the index: a scan would have rewritten the index's stamp (a new file).
    let stamp = project.join("sessions/.preload-index/stamp");
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).unwrap());
    let before = inode(&stamp);
    assert_eq!(find_session(&ctx), Some(idle.clone()));
    assert_eq!(inode(&stamp), before, "no scan");
    assert_eq!(
        fs::read_to_string(cache_file(&ctx)).unwrap().trim(),
        idle.to_string_lossy()
    );
    // A stamp that does not match the sessions directory: not used, and rebuilt by a scan.
    fs::remove_file(cache_file(&ctx)).unwrap();
    fs::write(&stamp, "planted\n").unwrap();
    let planted = inode(&stamp);
    assert_eq!(find_session(&ctx), Some(idle.clone()));
    assert_ne!(inode(&stamp), planted, "scanned and rebuilt");
    // A new session directory makes the index not current: the next lookup scans, so a session
    // the index never saw (here one whose pid is the owner's) wins as in `session.sh find`.
    fs::remove_file(cache_file(&ctx)).unwrap();
    let newer = write_state(&project, "2026_98_new", "{\"pid\": 91}");
    assert_eq!(find_session(&ctx), Some(newer));
}

#[test]
fn a_pid_the_engine_moved_is_not_taken_from_the_index() {
    let (tmp, project, home) = project();
    let first = write_state(&project, "2026_a", "{\"pid\": 92, \"sessionId\": \"conv\"}");
    let second = write_state(&project, "2026_b", "{\"pid\": 4100000}");
    let ctx = ctx_in(&project, &home, 92, tmp.path());
    assert_eq!(find_session(&ctx), Some(first.clone()), "found by a scan");
    // The engine's activate of the other session (an existing directory): the PID moves,
    // `2026_a` keeps the conversation, the index is not told; the PID cache is gone.
    fs::write(first.join(STATE_FILE), "{\"sessionId\": \"conv\"}").unwrap();
    fs::write(second.join(STATE_FILE), "{\"pid\": 92}").unwrap();
    fs::remove_file(cache_file(&ctx)).unwrap();
    let ctx = ctx_in_conversation(&project, &home, 92, tmp.path(), "conv");
    assert_eq!(
        find_session(&ctx),
        Some(second),
        "the session holding the PID"
    );
    assert!(
        state::load(&first.join(STATE_FILE))
            .unwrap()
            .get("pid")
            .is_none(),
        "and the other one is not taken over"
    );
}

#[test]
fn the_remembered_no_session_answer_is_not_given_to_another_conversation() {
    let (tmp, project, home) = project();
    let dir = write_state(&project, "2026_c", "{\"sessionId\": \"c2\"}");
    let in_conversation = |id: &str| ctx_in_conversation(&project, &home, 93, tmp.path(), id);
    assert_eq!(find_session(&in_conversation("c1")), None);
    assert!(no_session_file(&in_conversation("c1")).is_file());
    // The same process in the conversation the session ran: its answer is its own.
    assert_eq!(find_session(&in_conversation("c2")), Some(dir));
}

#[test]
fn a_session_serves_the_conversation_it_names_unless_another_live_process_owns_it() {
    let (tmp, project, home) = project();
    let ctx = ctx_in(&project, &home, 4_000_101, tmp.path());
    let dir = project.join("sessions/2026_01_01_S");
    fs::create_dir_all(&dir).unwrap();
    let write = |pid: u32| {
        let body = json!({"pid": pid, "sessionId": "conv-1"}).to_string();
        fs::write(dir.join(STATE_FILE), body).unwrap();
    };
    write(4_000_101);
    assert!(serves_conversation(&ctx, &dir, "conv-1"));
    assert!(!serves_conversation(&ctx, &dir, "conv-2"));
    assert!(!serves_conversation(&ctx, &dir, ""));
    write(4_000_102);
    assert!(
        serves_conversation(&ctx, &dir, "conv-1"),
        "its owner is gone"
    );
    write(std::process::id());
    assert!(
        !serves_conversation(&ctx, &dir, "conv-1"),
        "a live process owns it"
    );
}

#[test]
fn the_records_of_a_conversations_replaced_windows_are_named_by_it_and_forgotten_together() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path();
    let one = window_record_path(sessions, 5, "conv/1");
    assert_eq!(
        one,
        sessions.join(".seeds").join("5.conv_1.ended.json"),
        "the conversation's name made safe"
    );
    fs::create_dir_all(sessions.join(".seeds")).unwrap();
    for path in [
        one,
        window_record_path(sessions, 6, "conv/1"),
        window_record_path(sessions, 6, "conv-2"),
        sessions.join(".seeds/6.json"),
    ] {
        fs::write(path, "{}").unwrap();
    }
    forget_window_records(sessions, "conv/1");
    let mut left: Vec<String> = fs::read_dir(sessions.join(".seeds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["6.conv-2.ended.json", "6.json"]);
}
