//! `preload-session-end`: at `SessionEnd` the ended conversation's compaction marker goes and,
//! when the Claude process ends, the owner's seed; sessions, and every other process's files,
//! stay byte for byte.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use preload_test_support::files::{self, Dirs};
use preload_test_support::pipeline_steps::session_start;
use preload_test_support::sandbox::{Answer, Sandbox, read_json, strings};

const BIN: &str = "preload-session-end";

fn end(sb: &Sandbox, reason: &str) -> Answer {
    let answer = sb.run(
        BIN,
        json!({"hook_event_name": "SessionEnd", "reason": reason}),
    );
    answer.assert_contract();
    assert_eq!(answer.stdout, "", "SessionEnd prints nothing");
    answer
}

fn carry(sb: &Sandbox) -> PathBuf {
    sb.seed_path().with_extension("carry.json")
}

fn ended(sb: &Sandbox) -> PathBuf {
    sb.seed_path()
        .with_file_name(format!("{}.{}.ended.json", sb.pid, sb.conversation))
}

/// Every file under `dir` with its bytes, for "untouched" checks. The released lock a directory
/// keeps for its next one holds no one's data.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files::snapshot(dir, Dirs::Omitted, &[preload_core::primitives::lock::SPARE])
}

/// A worker session for the sandbox's conversation: `precompact` leaves its compaction marker.
fn leave_compaction_marker(sb: &Sandbox, conversation: &str) -> PathBuf {
    let dispatch = sb.project_file("docs/dispatches/task.md", "# Dispatch\n\n## Progress\n");
    fs::write(
        sb.home.join(".claude/worker-dispatch-path"),
        format!("{}\n", dispatch.display()),
    )
    .unwrap();
    let answer = sb.run_args(
        "preload-compaction-reread",
        &["precompact"],
        json!({"hook_event_name": "PreCompact", "session_id": conversation}),
    );
    answer.assert_contract();
    let uid = nix::unistd::geteuid().as_raw();
    let marker = sb
        .root()
        .join(format!("claude-preload-{uid}/compaction-{conversation}"));
    assert!(marker.is_file(), "precompact left {}", marker.display());
    marker
}

/// The first call of `conversation` after it resumes: denied when a compaction marker is left.
fn first_call_is_denied(sb: &Sandbox, conversation: &str) -> bool {
    let answer = sb.run_args(
        "preload-compaction-reread",
        &["pretooluse"],
        json!({"hook_event_name": "PreToolUse", "session_id": conversation,
            "tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    answer.assert_contract();
    answer.decision() == "deny"
}

#[test]
fn the_process_ending_removes_its_seed_and_marker_and_keeps_a_resumable_record() {
    let sb = Sandbox::new();
    session_start(&sb, "startup").assert_contract();
    let seed = read_json(&sb.seed_path());
    assert!(!strings(&seed, "preloadedFiles").is_empty());
    let marker = leave_compaction_marker(&sb, &sb.conversation);
    let other_marker = leave_compaction_marker(&sb, "another-conversation");
    let sessions = sb.session("other", &json!({"pid": 4_000_002, "lifecycle": "active"}));
    let before = snapshot(&sessions);

    end(&sb, "prompt_input_exit");

    assert!(!sb.seed_path().exists(), "the seed is gone");
    assert!(!carry(&sb).exists(), "its carry too");
    let record = read_json(&ended(&sb));
    assert_eq!(record["sessionId"], json!(sb.conversation));
    assert_eq!(record["preloadedFiles"], seed["preloadedFiles"]);
    assert!(!marker.exists(), "the conversation's marker is gone");
    assert!(!first_call_is_denied(&sb, &sb.conversation));
    assert!(other_marker.exists(), "another conversation's marker stays");
    assert_eq!(snapshot(&sessions), before, "sessions untouched");
    // Ending twice finds nothing more to do.
    end(&sb, "other");
    assert!(ended(&sb).is_file());
    // `preload doctor` takes the record for what it is, not for a dead process's seed.
    let stale = sb.sessions.join(".seeds/4000006.json");
    fs::write(
        &stale,
        json!({"pid": 4_000_006, "lifecycle": "seeding"}).to_string(),
    )
    .unwrap();
    let doctor = sb.run_raw("preload", &["doctor"], "");
    assert!(
        doctor
            .stdout
            .contains("4000006.json belongs to a process that is gone")
    );
    assert!(!doctor.stdout.contains(".ended.json"), "{}", doctor.stdout);
}

#[test]
fn a_resume_after_the_end_goes_on_from_the_record() {
    let mut sb = Sandbox::new();
    // The first client process: gone by the time of the resume.
    sb.pid = 4_000_003;
    let first = session_start(&sb, "startup");
    let sent = preload_test_support::sandbox::shown_parts(&first.context());
    assert!(sent.iter().any(|(p, ..)| p.ends_with("COMMANDS.md")));
    end(&sb, "logout");
    assert!(ended(&sb).is_file());

    // `claude --resume` in a new process: the replayed conversation holds the standards.
    let first_seed = ended(&sb);
    sb.pid = std::os::unix::process::parent_id();
    resume_sends_nothing_again(&sb, &sent);
    assert!(!first_seed.exists(), "the record is taken over");
    assert_eq!(read_json(&carry(&sb))["sessionId"], json!(sb.conversation));
}

/// A `--resume` of the sandbox's conversation in its process: nothing of `sent` (the parts the
/// conversation holds) is sent again.
fn resume_sends_nothing_again(sb: &Sandbox, sent: &[(String, usize, usize)]) {
    let resumed = session_start(sb, "resume");
    resumed.assert_contract();
    for (path, part, _) in preload_test_support::sandbox::shown_parts(&resumed.context()) {
        let before = sent.iter().find(|(p, ..)| *p == path);
        assert!(
            before.is_none_or(|(_, seen, all)| seen < all && part > *seen),
            "sent again on resume: {path} part {part}"
        );
    }
}

/// Under the engine's `run.sh` every client of one supervisor runs as the supervisor's PID:
/// each conversation that ends keeps its own record, and a resume of the earlier one goes on
/// from its own.
#[test]
fn conversations_of_one_owner_pid_keep_a_record_each() {
    let mut sb = Sandbox::new();
    sb.pid = 4_000_005;
    let first_conversation = sb.conversation.clone();
    let first = session_start(&sb, "startup");
    let sent = preload_test_support::sandbox::shown_parts(&first.context());
    end(&sb, "prompt_input_exit");
    let first_record = ended(&sb);
    "second-conversation".clone_into(&mut sb.conversation);
    session_start(&sb, "startup").assert_contract();
    end(&sb, "prompt_input_exit");
    assert!(first_record.is_file() && ended(&sb).is_file());
    assert_ne!(first_record, ended(&sb));

    sb.conversation = first_conversation;
    sb.pid = std::os::unix::process::parent_id();
    resume_sends_nothing_again(&sb, &sent);
}

#[test]
fn the_owners_session_takes_in_its_seed_and_stays() {
    let sb = Sandbox::new();
    sb.active_session("mine", &json!({"currentPhase": "1: Interrogation"}));
    session_start(&sb, "startup").assert_contract();
    assert!(
        sb.seed_path().is_file(),
        "SessionStart seeds beside the session"
    );
    // A stashed entry and a queued file the session has not taken in yet.
    fs::write(
        carry(&sb),
        json!({"pid": sb.pid, "sessionId": sb.conversation,
            "pendingAllowInjections": [{"ruleId": "r", "content": "KEPT", "agentId": ""}],
            "owed": ["/x/queued.md"]})
        .to_string(),
    )
    .unwrap();

    end(&sb, "other");

    assert!(!sb.seed_path().exists() && !carry(&sb).exists());
    assert!(!ended(&sb).exists(), "the session holds the record");
    let state = sb.state("mine");
    assert_eq!(state["lifecycle"], "active");
    assert_eq!(state["currentPhase"], "1: Interrogation");
    assert_eq!(state["pendingAllowInjections"][0]["content"], "KEPT");
    assert!(strings(&state, "pendingPreloads").contains(&"/x/queued.md".to_owned()));
}

#[test]
fn clear_and_resume_leave_the_seed_to_the_session_start_that_follows() {
    for reason in ["clear", "resume"] {
        let sb = Sandbox::new();
        session_start(&sb, "startup").assert_contract();
        let before = snapshot(&sb.sessions);
        let marker = leave_compaction_marker(&sb, &sb.conversation);
        end(&sb, reason);
        assert_eq!(
            snapshot(&sb.sessions),
            before,
            "{reason}: seed and carry untouched"
        );
        assert!(
            !marker.exists(),
            "{reason}: the ended conversation's marker goes"
        );
    }
}

#[test]
fn malformed_stdin_fails_open_and_touches_nothing() {
    let sb = Sandbox::new();
    session_start(&sb, "startup").assert_contract();
    let before = snapshot(&sb.sessions);
    for stdin in [
        &b""[..],
        b"not json",
        b"[1, 2]",
        b"{\"reason\": ",
        b"\xff\xfe{}",
    ] {
        let answer = sb.run_raw(BIN, &[], stdin.to_vec());
        answer.assert_contract();
        assert_eq!(answer.stdout, "");
    }
    assert_eq!(snapshot(&sb.sessions), before);
}

#[test]
fn without_sessions_or_a_seed_nothing_is_created() {
    let sb = Sandbox::bare();
    fs::remove_dir(&sb.sessions).unwrap();
    end(&sb, "other");
    assert!(!sb.sessions.exists(), "no sessions directory made");
    let sb = Sandbox::bare();
    end(&sb, "other");
    assert_eq!(
        fs::read_dir(&sb.sessions).unwrap().count(),
        0,
        "no seed made"
    );
}

#[test]
fn a_concurrent_process_keeps_its_seed_and_session() {
    let sb = Sandbox::new();
    session_start(&sb, "startup").assert_contract();
    // Another live Claude process in the same project, with its seed, carry and session.
    let other = std::os::unix::process::parent_id();
    let seeds = sb.sessions.join(".seeds");
    fs::write(
        seeds.join(format!("{other}.json")),
        json!({"pid": other, "lifecycle": "seeding", "preloadedFiles": ["/a.md"]}).to_string(),
    )
    .unwrap();
    fs::write(
        seeds.join(format!("{other}.carry.json")),
        json!({"pid": other, "sessionId": "theirs"}).to_string(),
    )
    .unwrap();
    sb.session("theirs", &json!({"pid": other, "lifecycle": "active"}));
    let mine = [sb.seed_path(), carry(&sb)];
    let theirs: Vec<(PathBuf, Vec<u8>)> = snapshot(&sb.sessions)
        .into_iter()
        .filter(|(p, _)| !mine.contains(p))
        .collect();
    assert_eq!(theirs.len(), 3, "their seed, carry and session");

    end(&sb, "prompt_input_exit");

    let after = snapshot(&sb.sessions);
    for (path, bytes) in &theirs {
        let now = after.iter().find(|(p, _)| p == path).map(|(_, b)| b);
        assert_eq!(now, Some(bytes), "{} untouched", path.display());
    }
    assert!(!sb.seed_path().exists(), "only the owner's seed went");
}

#[test]
fn a_corrupt_seed_is_left_as_it_is() {
    let sb = Sandbox::new();
    let seeds = sb.sessions.join(".seeds");
    fs::create_dir_all(&seeds).unwrap();
    fs::write(sb.seed_path(), "{\"pid\": ").unwrap();
    end(&sb, "other");
    assert_eq!(fs::read_to_string(sb.seed_path()).unwrap(), "{\"pid\": ");
    assert!(!ended(&sb).exists());
}
