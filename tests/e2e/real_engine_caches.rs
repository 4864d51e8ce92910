//! The session lookup's caches against the real engine's `session.sh` (opt-in, as
//! `real_engine`: `PRELOAD_E2E_ENGINE` names an engine checkout, `PRELOAD_E2E_JQ` a jq 1.7 or
//! newer; without them the test records why it did not run). No client is needed: the engine's
//! own script activates sessions beside the hook binaries, and each answer of a cache is
//! checked against what the engine wrote.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::real_engine::engine_or_skip;
use preload_test_support::sandbox::Sandbox;

/// `session.sh <args>` as the engine runs it for this sandbox's client (its PID, its PID cache
/// directory), with the checkout's scripts where `session.sh` sources them.
fn session_sh(sb: &Sandbox, engine: &Path, jq: &Path, args: &[&str]) {
    let scripts = sb.home.join(".claude/scripts");
    if !scripts.exists() {
        std::os::unix::fs::symlink(engine.join("scripts"), &scripts).unwrap();
    }
    let path = format!(
        "{}:/usr/bin:/bin",
        jq.parent().unwrap_or(Path::new("/usr/bin")).display()
    );
    let out = Command::new("bash")
        .arg(engine.join("scripts/session.sh"))
        .args(args)
        .env_clear()
        .env("HOME", &sb.home)
        .env("PATH", path)
        .env("CLAUDE_SUPERVISOR_PID", sb.pid.to_string())
        .env("CLAUDE_SESSION_CACHE_DIR", sb.root())
        .current_dir(&sb.project)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "session.sh {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The guard engine's count of this sandbox's calls in session `name`.
fn count_in(sb: &Sandbox, name: &str) -> u64 {
    sb.state(name)["toolCallsByTranscript"]["test.jsonl"]
        .as_u64()
        .unwrap_or(0)
}

/// One guard-engine call, which must be allowed and counted in session `used` and not in
/// `other`.
fn call_counts_in(sb: &Sandbox, used: &str, other: &str, what: &str) {
    let before = (count_in(sb, used), count_in(sb, other));
    let answer = sb.run(
        "preload-overflow",
        json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "git status"}}),
    );
    answer.assert_contract();
    assert_ne!(answer.decision(), "deny", "{what}: {}", answer.reason());
    assert_eq!(
        (count_in(sb, used), count_in(sb, other)),
        (before.0 + 1, before.1),
        "{what}: counted in `{used}`, not in `{other}`"
    );
}

/// The session the index names for `key`, from whichever bucket holds it.
fn index_entry(sb: &Sandbox, key: &str) -> Option<String> {
    std::fs::read_dir(sb.sessions.join(".preload-index"))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .find_map(|bucket| bucket.get(key)?.as_str().map(str::to_owned))
}

/// What happens to a session `session.sh activate` just wrote before the agent's next counted
/// call: `engine session phase` clears its `loading` flag (calls count), and time passes. The
/// state's `startedAt` has whole seconds, and it is part of the counting epoch
/// (docs/state-format.md, *Counters*): a state written afresh in the second the directory's
/// previous one was created cannot be told from a stale write-back, and the previous life's
/// counts would stand. An agent's activations are tool calls seconds apart; this scenario's are
/// milliseconds apart. So instead of waiting for the wall clock, each activation is dated
/// `life` seconds after a fixed instant: every life of a directory has its own epoch, on any
/// machine at any speed.
fn loaded(dir: &Path, life: u32) {
    preload_core::state::update(
        &dir.join(".state.json"),
        preload_core::state::Write::per_call(
            std::time::Instant::now() + std::time::Duration::from_secs(2),
        ),
        |s| {
            s.remove("loading");
            s.set("startedAt", json!(format!("2026-02-01T00:00:{life:02}Z")));
        },
    )
    .unwrap();
}

/// `session.sh activate sessions/<name> implement` with the checkout's `engine` and `jq`, then
/// the session [`loaded`] in its `life`, as the agent's next call finds it.
fn activate(sb: &Sandbox, (engine, jq): (&Path, &Path), name: &str, life: u32) {
    let args = ["activate", &format!("sessions/{name}"), "implement"];
    session_sh(sb, engine, jq, &args);
    loaded(&sb.sessions.join(name), life);
}

/// A session the engine's `session.sh` activates is the one the next call uses, past each cache
/// of the lookup: the remembered "no session" answer (a new session directory; then an existing
/// one, where only the PID cache the engine rewrote in place changed), the PID cache (the session
/// it named lost its PID to the engine's activate), and the index (the PID cache gone, the index
/// still naming the session the engine took the PID from).
#[test]
fn real_engine_activations_reach_every_session_cache() {
    let name = "real_engine_activations_reach_every_session_cache";
    let Some((engine, jq)) = engine_or_skip(name) else {
        return;
    };
    crate::support::record(name, "ran");
    let sb = Sandbox::new();
    sb.session(
        "old",
        &json!({"pid": 4_000_000, "skill": "implement", "lifecycle": "active",
            "currentPhase": "1: Setup", "startedAt": "2026-01-01T00:00:00Z"}),
    );
    // No session: the gate denies, and the second call is answered from the remembered "none".
    for _ in 0..2 {
        let answer = sb.run(
            "preload-overflow",
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": "git status"}}),
        );
        assert_eq!(answer.decision(), "deny", "gated before activation");
    }
    // A new session directory.
    activate(&sb, (&engine, &jq), "fresh", 1);
    call_counts_in(&sb, "fresh", "old", "a new session directory");
    // An existing directory (its owner is gone): the sessions directory does not change, the
    // PID cache is rewritten in place, and `fresh` loses the PID.
    activate(&sb, (&engine, &jq), "old", 2);
    call_counts_in(&sb, "old", "fresh", "an existing session directory");
    // Back to `fresh`, found once without the PID cache (a cleaned /tmp): the index learns that
    // the PID is in `fresh`.
    activate(&sb, (&engine, &jq), "fresh", 3);
    let cache = sb.root().join(format!("claude-session-cache-{}", sb.pid));
    assert!(cache.is_file(), "session.sh writes the PID cache");
    std::fs::remove_file(&cache).unwrap();
    call_counts_in(&sb, "fresh", "old", "re-activated, without the PID cache");
    assert_eq!(
        index_entry(&sb, &format!("pid:{}", sb.pid)),
        Some("fresh".to_owned())
    );
    // The engine moves the PID to `old` (the index, which it does not know of, still names
    // `fresh`), and the PID cache goes again: the index's answer is checked against `fresh`'s
    // state and not trusted.
    activate(&sb, (&engine, &jq), "old", 4);
    std::fs::remove_file(&cache).unwrap();
    call_counts_in(&sb, "old", "fresh", "a stale index entry");
    println!("real engine caches: 4 activations by session.sh, each found at the next call");
}
