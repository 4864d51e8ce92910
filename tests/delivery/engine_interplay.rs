//! Our hooks beside the engine's own writers (modelled in `engine_model`): nothing a hook keeps
//! is lost to the engine's activate, continue or update, every file owed to the context arrives
//! once, and the two lock implementations respect each other.

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use preload_test_support::engine_model::Engine;
use preload_test_support::sandbox::{Answer, Sandbox, repo, shown_parts, strings};

/// PreToolUse through the guard engine.
fn pre(sb: &Sandbox, tool: &str, input: &Value) -> Answer {
    let a = sb.run(
        "preload-overflow",
        json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input}),
    );
    a.assert_contract();
    a
}

/// The PostToolUse hooks of one call; their texts joined.
fn post(sb: &Sandbox, tool: &str, input: &Value, response: &Value) -> String {
    let event = json!({"hook_event_name": "PostToolUse", "tool_name": tool,
        "tool_input": input, "tool_response": response});
    [
        "preload-templates",
        "preload-phase-commands",
        "preload-injections",
    ]
    .iter()
    .map(|bin| {
        let a = sb.run(bin, event.clone());
        a.assert_contract();
        a.context()
    })
    .filter(|t| !t.is_empty())
    .collect::<Vec<_>>()
    .join("\n")
}

/// One tool call as the client makes it: PreToolUse, then (when allowed) the PostToolUse hooks.
/// What reached the model: the deny reason, or the PreToolUse and PostToolUse texts.
fn call(sb: &Sandbox, tool: &str, input: &Value) -> (bool, String) {
    let guard = pre(sb, tool, input);
    if guard.decision() == "deny" {
        return (false, guard.reason());
    }
    let after = post(sb, tool, input, &json!({"stdout": ""}));
    (true, format!("{}\n{after}", guard.context()))
}

/// The last part of `path` shown in `text` and its number of parts; `missing` says what fails
/// when `text` shows none of it.
fn last_part_shown(text: &str, path: &str, missing: &str) -> (usize, usize) {
    shown_parts(text)
        .into_iter()
        .find(|(p, ..)| p == path)
        .map(|(_, last, total)| (last, total))
        .expect(missing)
}

fn read(sb: &Sandbox, rel: &str) -> Value {
    json!({"file_path": sb.project.join(rel)})
}

/// `preload activate <dir> --skill <skill>`, which must succeed.
fn activate(sb: &Sandbox, dir: &str, skill: &str) {
    let out = sb
        .command("preload")
        .args(["activate", dir, "--skill", skill])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Ordinary calls until nothing is queued or stashed (at most `limit`); the texts they carried.
fn drain(sb: &Sandbox, name: &str, limit: usize) -> String {
    let mut seen = String::new();
    for _ in 0..limit {
        let state = sb.state(name);
        if strings(&state, "pendingPreloads").is_empty()
            && state["pendingAllowInjections"]
                .as_array()
                .is_none_or(Vec::is_empty)
        {
            break;
        }
        let (_, text) = call(sb, "Bash", &json!({"command": "git status"}));
        seen.push_str(&text);
        seen.push('\n');
        // An agent that is told to log, logs.
        if text.contains("[warn: heartbeat]") {
            let log = json!({"command": format!("engine log sessions/{name}/LOG.md")});
            seen.push_str(&call(sb, "Bash", &log).1);
        }
    }
    seen
}

// Finding 1: before activation, a directive found by a denied Read stays owed to the context,
// and what the hooks keep beside the queue survives the engine's activate.

#[test]
fn what_a_hook_keeps_before_activation_survives_the_engines_activate() {
    let sb = Sandbox::new();
    sb.session_start_event(&json!({"hook_event_name": "SessionStart", "source": "startup"}));
    let prompt = sb.run(
        "preload-prompt-submit",
        json!({"hook_event_name": "UserPromptSubmit", "prompt": "/implement totals"}),
    );
    prompt.assert_contract();
    // The session gate denies the Read; its directory's directives are found all the same.
    let (allowed, reason) = call(&sb, "Read", &read(&sb, "packages/estimate/src/total.ts"));
    assert!(!allowed, "gated before activation");
    assert!(reason.contains("[block: session-gate]"), "{reason}");
    let directive = sb
        .project
        .join("packages/estimate/.directives/INVARIANTS.md")
        .to_string_lossy()
        .into_owned();
    let seed = sb.seed();
    assert!(
        strings(&seed, "pendingPreloads").contains(&directive),
        "owed"
    );
    assert!(
        !strings(&seed, "preloadedFiles").contains(&directive),
        "not out yet"
    );
    // The seed holds only what the engine's activate reads; the rest is in its carry.
    let carry_path = sb.seed_path().with_extension("carry.json");
    let carry: Value = serde_json::from_str(&fs::read_to_string(&carry_path).unwrap()).unwrap();
    assert_eq!(carry["sessionId"], "test-session");
    assert_eq!(carry["invokedSkills"], json!(["implement"]));
    assert!(seed.get("sessionId").is_none() && seed.get("invokedSkills").is_none());

    let engine = Engine::new(&sb);
    engine.activate("test", "implement", sb.pid);
    assert!(
        !sb.seed_path().exists(),
        "the engine's activate deleted the seed"
    );
    assert!(
        sb.state("test").get("sessionId").is_none(),
        "and dropped the conversation"
    );

    // The next call: the carry is adopted, the directive goes out, once.
    let (allowed, _) = call(&sb, "Read", &read(&sb, "packages/estimate/src/total.ts"));
    assert!(allowed);
    let carried = drain(&sb, "test", 12);
    let state = sb.state("test");
    assert_eq!(state["sessionId"], "test-session");
    assert!(strings(&state, "invokedSkills").contains(&"implement".to_owned()));
    assert!(strings(&state, "preloadedFiles").contains(&directive));
    assert!(!carry_path.exists(), "the carry is gone once adopted");
    assert_eq!(sb.delivery_count(&directive), 1, "{carried}");
    sb.assert_no_duplicates();
}

// Finding 2: the core standards a SessionStart could not carry reach the model after the
// engine's activate, which lists all six as delivered; every part exactly once.

#[test]
fn standards_that_did_not_fit_arrive_after_the_engines_activate_every_part_once() {
    let mut sb = Sandbox::new();
    // One registration only (a user who wired fewer): the standards cannot all fit.
    let start = sb.run(
        "preload-session-start",
        json!({"hook_event_name": "SessionStart", "source": "startup"}),
    );
    start.assert_contract();
    let mut shown = start.context();
    let owed = strings(&sb.seed(), "pendingPreloads");
    let engine = Engine::new(&sb);
    let core = engine.core_paths();
    assert!(
        core.iter().any(|c| owed.contains(c)),
        "some standards wait: {owed:?}"
    );
    engine.activate("test", "implement", sb.pid);
    let state = sb.state("test");
    assert!(
        core.iter()
            .all(|c| strings(&state, "preloadedFiles").contains(c))
    );

    sb.extra_env.clear();
    shown.push('\n');
    shown.push_str(&drain(&sb, "test", 40));
    let state = sb.state("test");
    for file in &core {
        assert!(strings(&state, "preloadedFiles").contains(file), "{file}");
        assert_eq!(sb.delivery_count(file), 1, "{file} once");
        let parts: Vec<_> = shown
            .lines()
            .filter(|l| l.starts_with(&format!("[Preloaded: {file} (part ")))
            .collect();
        let mut distinct = parts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), parts.len(), "{file}: a part twice");
        if let Some((_, last, total)) = shown_parts(&shown).into_iter().find(|(p, ..)| p == file) {
            assert_eq!(last, total, "{file}: every part out");
            if total > 1 {
                assert_eq!(parts.len(), total, "{file}: parts 1 to {total}: {parts:#?}");
            }
        }
    }
    sb.assert_no_duplicates();
}

// Finding 3: after a dehydrate and the engine's continue, a split file starts again from its
// first part in the new context.

#[test]
fn a_continued_session_gets_split_files_from_their_first_part() {
    let mut sb = Sandbox::new();
    let engine = Engine::new(&sb);
    let invariants = engine.core_paths()[1].clone();
    sb.active_session(
        "test",
        &json!({"sessionId": "old-conversation", "loading": false,
            "preloadedFiles": [], "pendingPreloads": [invariants],
            "preloadParts": {invariants.clone(): 4}}),
    );
    engine.restart("test");
    // The restarted client: a new process, a new conversation, whose SessionStart writes a seed.
    sb.pid = std::os::unix::process::parent_id();
    "after-restart".clone_into(&mut sb.conversation);
    let start = sb.run(
        "preload-session-start",
        json!({"hook_event_name": "SessionStart", "source": "startup"}),
    );
    start.assert_contract();
    let engine = Engine::new(&sb);
    engine.continue_session("test", sb.pid);
    assert_eq!(
        sb.state("test")["preloadParts"][&invariants],
        json!(4),
        "the engine's continue keeps the old window's progress"
    );
    let seen = format!("{}\n{}", start.context(), drain(&sb, "test", 40));
    let (last, total) =
        last_part_shown(&seen, &invariants, "INVARIANTS.md reaches the new context");
    assert!(
        seen.contains(&format!("[Preloaded: {invariants} (part 1/{total})]")),
        "from the first part"
    );
    assert_eq!(last, total);
    assert_eq!(sb.state("test")["sessionId"], "after-restart");
}

// The engine's dehydrate removes `sessionId`; without tmux the conversation goes on in the same
// window, which keeps its part progress. `sessionId` stays removed until the restart is carried
// out (the engine's run.sh would resume the conversation it names instead of starting afresh).

#[test]
fn a_window_that_goes_on_after_the_engines_dehydrate_keeps_its_part_progress() {
    let sb = Sandbox::new();
    let engine = Engine::new(&sb);
    let invariants = engine.core_paths()[1].clone();
    let conversation = sb.conversation.clone();
    sb.active_session(
        "test",
        &json!({"sessionId": conversation, "preloadConversation": conversation,
        "loading": false, "preloadedFiles": [], "pendingPreloads": [invariants],
        "preloadParts": {invariants.clone(): 2},
        "pendingAllowInjections": [
            {"ruleId": "heartbeat-warn", "content": "[warn: heartbeat] log", "agentId": ""}
        ]}),
    );
    engine.dehydrate(
        "test",
        &json!({"summary": "s", "requiredFiles": [], "nextSteps": []}),
    );
    assert!(sb.state("test").get("sessionId").is_none());
    // The call after it, in the same conversation: PostToolUse drains the stash.
    let (_, seen) = call(&sb, "Bash", &json!({"command": "git status"}));
    assert!(seen.contains("[warn: heartbeat] log"), "{seen}");
    let state = sb.state("test");
    assert!(state.get("sessionId").is_none(), "not written back");
    assert_eq!(state["preloadConversation"], json!(conversation));
    assert_eq!(
        state["preloadParts"][&invariants],
        json!(2),
        "the window goes on: two parts of it are still in context"
    );
    // The agent takes the session up again in the same process: the restart is off.
    activate(&sb, "sessions/test", "implement");
    let (_, seen) = call(&sb, "Bash", &json!({"command": "git status"}));
    assert_eq!(
        sb.state("test")["sessionId"],
        json!(conversation),
        "bound again"
    );
    let (last, _) = last_part_shown(&seen, &invariants, "INVARIANTS.md goes on");
    assert!(
        !seen.contains(&format!("[Preloaded: {invariants} (part 1/")) && last >= 3,
        "from its third part: {:?}",
        shown_parts(&seen)
    );
}

// The statusline names the client's conversation in `sessionId` on its own; a conversation that
// takes a session over (a `continue` after a restart) does not make the old window's part
// progress its own by it.

#[test]
fn the_statusline_naming_a_new_conversation_first_still_lets_the_old_window_go() {
    let mut sb = Sandbox::new();
    let invariants = Engine::new(&sb).core_paths()[1].clone();
    sb.active_session(
        "test",
        &json!({"sessionId": "old-conversation", "preloadConversation": "old-conversation",
            "loading": false, "preloadedFiles": [], "pendingPreloads": [invariants],
            "preloadParts": {invariants.clone(): 2}}),
    );
    sb.conversation = "new-conversation".to_owned();
    Engine::new(&sb).statusline("test", sb.pid, &sb.conversation, 0.3);
    assert_eq!(sb.state("test")["sessionId"], "new-conversation");
    let (_, seen) = call(&sb, "Bash", &json!({"command": "git status"}));
    assert!(
        seen.contains(&format!("[Preloaded: {invariants} (part 1/")),
        "the new window starts the file from its first part: {seen}"
    );
    assert_eq!(sb.state("test")["preloadConversation"], "new-conversation");
}

// A conversation whose session was continued by another after a restart leaves its window
// resumable: a `--resume` of it goes on from the window its process ended with.

#[test]
fn the_window_a_continue_replaced_is_resumed_without_sending_it_again() {
    resume_the_window_a_continue_replaced(&OldClient::Ends);
}

// The same when the restart killed the old client, so that it ran no `SessionEnd` (the
// engine's watchdog): the guard engine keeps the window just before the `continue`, whether
// the next client started after the kill or was already running.

#[test]
fn the_window_of_a_client_killed_by_its_restart_is_resumed_without_sending_it_again() {
    resume_the_window_a_continue_replaced(&OldClient::Killed);
}

#[test]
fn the_window_of_a_killed_client_continued_by_a_running_one_is_resumed_without_sending_it_again() {
    resume_the_window_a_continue_replaced(&OldClient::KilledWhileTheNextRuns);
}

/// How the client whose session is restarted goes.
enum OldClient {
    /// It exits: its `SessionEnd` runs.
    Ends,
    /// It is killed, then the next client starts.
    Killed,
    /// It is killed while the next client is already running.
    KilledWhileTheNextRuns,
}

fn resume_the_window_a_continue_replaced(old_client: &OldClient) {
    let mut sb = Sandbox::new();
    let mut old_process = Command::new("sleep").arg("30").spawn().unwrap();
    sb.pid = old_process.id();
    let engine = Engine::new(&sb);
    let core = engine.core_paths();
    let old = sb.conversation.clone();
    sb.active_session(
        "test",
        &json!({"sessionId": old, "preloadConversation": old, "loading": false,
            "preloadedFiles": core, "pendingPreloads": []}),
    );
    engine.restart("test");
    if matches!(old_client, OldClient::Ends) {
        sb.run(
            "preload-session-end",
            json!({"hook_event_name": "SessionEnd", "reason": "other"}),
        )
        .assert_contract();
    }
    // The next client: a new process and conversation.
    let old_pid = sb.pid;
    let start_next = |sb: &mut Sandbox| {
        sb.pid = std::os::unix::process::parent_id();
        "after-restart".clone_into(&mut sb.conversation);
        sb.run(
            "preload-session-start",
            json!({"hook_event_name": "SessionStart", "source": "startup"}),
        )
        .assert_contract();
    };
    if matches!(old_client, OldClient::KilledWhileTheNextRuns) {
        start_next(&mut sb);
    }
    let _ = old_process.kill();
    let _ = old_process.wait();
    if !matches!(old_client, OldClient::KilledWhileTheNextRuns) {
        start_next(&mut sb);
    }
    assert_ne!(sb.pid, old_pid);
    // The engine's continue, as the agent runs it.
    pre(
        &sb,
        "Bash",
        &json!({"command": "engine session continue sessions/test"}),
    );
    Engine::new(&sb).continue_session("test", sb.pid);
    call(&sb, "Bash", &json!({"command": "git status"}));
    assert_eq!(sb.state("test")["preloadConversation"], "after-restart");
    // Later the user resumes the old conversation in another process: its transcript holds
    // the core standards.
    let mut later = Command::new("sleep").arg("30").spawn().unwrap();
    sb.pid = later.id();
    sb.conversation = old;
    let resumed = sb.run(
        "preload-session-start",
        json!({"hook_event_name": "SessionStart", "source": "resume"}),
    );
    let _ = later.kill();
    let _ = later.wait();
    resumed.assert_contract();
    for path in &core {
        assert!(
            !resumed.context().contains(&format!("[Preloaded: {path}")),
            "{path} is in the resumed transcript already: {}",
            resumed.context()
        );
    }
}

// `engine session idle`, then the owner's next skill in another session: the window moves with
// the owner, so what it holds is not sent again.

#[test]
fn an_idle_sessions_window_moves_with_its_owner_to_the_next_session() {
    let sb = Sandbox::new();
    activate(&sb, "sessions/first", "implement");
    call(&sb, "Skill", &json!({"skill": "implement"}));
    drain(&sb, "first", 20);
    let held = strings(&sb.state("first"), "preloadedFiles");
    let core = Engine::new(&sb).core_paths();
    assert!(
        held.iter().any(|p| !core.contains(p)),
        "the first skill's files went out: {held:?}"
    );
    Engine::new(&sb).idle("first");
    // The client runs PreToolUse before the next command: it finds the idle session again.
    pre(
        &sb,
        "Bash",
        &json!({"command": "engine session activate sessions/second do"}),
    );
    activate(&sb, "sessions/second", "do");
    let now = strings(&sb.state("second"), "preloadedFiles");
    for path in &held {
        assert!(now.contains(path), "{path} is still in context: {now:?}");
    }
}

// Finding 4 and item 7: locks both ways.

#[test]
fn the_engines_lock_code_reclaims_a_dead_native_holder_at_once() {
    let sb = Sandbox::bare();
    let file = sb.root().join(".state.json");
    fs::write(&file, "{}").unwrap();
    let lock = preload_core::primitives::lock::StateLock::acquire(
        &file,
        Instant::now() + Duration::from_secs(1),
    )
    .unwrap();
    let dir = lock.path().to_path_buf();
    // The holder was killed: its lock stays behind, naming a process that is gone.
    std::mem::forget(lock);
    fs::write(dir.join("pid"), "4000000\n").unwrap();
    let names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["pid"], "only what the engine knows how to remove");
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(repo().join("tests/support/engine-lock.sh"))
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "at once, not by age"
    );
    assert!(!dir.exists());
}

#[test]
fn a_lock_with_anything_beside_pid_stops_the_engines_writers() {
    // Why a lock of ours holds `pid` alone: the engine cannot remove any other file, and its
    // age check then aborts the writer on Linux (what an `owner` file once did).
    let sb = Sandbox::bare();
    let file = sb.root().join(".state.json");
    let dir = sb.root().join(".state.json.lock");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("pid"), "4000000\n").unwrap();
    fs::write(dir.join("owner"), "4000000\n").unwrap();
    let out = Command::new("bash")
        .arg(repo().join("tests/support/engine-lock.sh"))
        .arg(&file)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "the engine's writer gives up");
}

#[test]
fn a_bash_lock_left_without_pid_never_turns_a_deny_into_an_allow() {
    let sb = Sandbox::new();
    // Heartbeat at 9: the next counted call blocks. A bash writer's lock without `pid` (taken,
    // not yet stamped, or left by a killed writer) holds the state.
    let dir = sb.active_session(
        "test",
        &json!({"loading": false, "toolCallsByTranscript": {"test.jsonl": 9},
            "toolCallsSinceLastLog": 9}),
    );
    fs::create_dir(dir.join(".state.json.lock")).unwrap();
    let started = Instant::now();
    let a = pre(&sb, "Read", &read(&sb, "packages/estimate/src/total.ts"));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(a.decision(), "deny", "{a:?}");
    assert!(a.reason().contains("heartbeat-block"), "{}", a.reason());
    assert!(
        dir.join(".state.json.lock").is_dir(),
        "the lock is not ours to take"
    );
    // A completed session stays gated too.
    fs::remove_dir(dir.join(".state.json.lock")).unwrap();
    sb.active_session("test", &json!({"lifecycle": "completed"}));
    fs::create_dir(dir.join(".state.json.lock")).unwrap();
    let a = pre(&sb, "Read", &read(&sb, "packages/estimate/src/total.ts"));
    assert_eq!(a.decision(), "deny");
    assert!(
        a.reason().contains("[block: session-gate]"),
        "{}",
        a.reason()
    );
}

// Finding 5: counts survive the engine's writes from a stale read.

#[test]
fn sub_agent_counts_survive_the_engines_read_outside_the_lock() {
    let sb = Sandbox::new();
    sb.active_session("test", &json!({"loading": false}));
    let engine = Engine::new(&sb);
    let sub_call = || {
        let a = sb.run(
            "preload-overflow",
            json!({"hook_event_name": "PreToolUse", "tool_name": "Read", "agent_id": "sub1",
                "tool_input": {"file_path": "/elsewhere/x.txt"}}),
        );
        a.assert_contract();
    };
    for i in 0..30 {
        // Each engine update read the state before two sub-agent calls counted.
        engine.update("test", "note", json!(i), || {
            sub_call();
            sub_call();
        });
    }
    sub_call();
    let state = sb.state("test");
    assert_eq!(
        state["toolCallsByTranscript"]["sub:sub1"],
        json!(61),
        "every count kept"
    );
    assert_eq!(state["note"], json!(29), "and every engine write");
}

// Item 5: a resumed conversation finds its session and is never locked out.

#[test]
fn a_resumed_conversation_takes_its_session_over_and_passes_the_gate() {
    let mut sb = Sandbox::new();
    sb.session_start_event(&json!({"hook_event_name": "SessionStart", "source": "startup"}));
    Engine::new(&sb).activate("test", "implement", sb.pid);
    let core = Engine::new(&sb).core_paths();
    let (allowed, _) = call(&sb, "Bash", &json!({"command": "git status"}));
    assert!(allowed);
    assert_eq!(
        sb.state("test")["sessionId"],
        "test-session",
        "tagged again"
    );
    // The client exits; `claude --resume` brings the conversation back in a new process.
    let mut state = sb.state("test");
    state["pid"] = json!(4_000_000);
    fs::write(
        sb.sessions.join("test/.state.json"),
        serde_json::to_string_pretty(&state).unwrap(),
    )
    .unwrap();
    sb.pid = std::os::unix::process::parent_id();
    let resumed =
        sb.session_start_event(&json!({"hook_event_name": "SessionStart", "source": "resume"}));
    let text = resumed.context();
    assert!(text.contains("Session: test"), "{text}");
    for file in core {
        assert!(
            !shown_parts(&text).iter().any(|(p, ..)| *p == file),
            "{file} is in the replayed conversation already"
        );
    }
    assert_eq!(sb.state("test")["pid"], json!(sb.pid));
    let (allowed, reason) = call(&sb, "Read", &read(&sb, "packages/estimate/src/total.ts"));
    assert!(allowed, "not locked out: {reason}");
}
