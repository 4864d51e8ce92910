use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::primitives::env::Env;

struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

fn fixture(guards: &Value) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    let project = root.join("project");
    fs::create_dir_all(home.join(".claude/engine/.directives")).unwrap();
    fs::create_dir_all(project.join(".claude")).unwrap();
    fs::create_dir_all(project.join("sessions")).unwrap();
    fs::write(home.join(".claude/engine/guards.json"), guards.to_string()).unwrap();
    Fixture {
        _tmp: tmp,
        home,
        project,
    }
}

impl Fixture {
    fn ctx(&self, extra: &[(&str, &str)]) -> Context {
        let mut env = Env::from_pairs([
            (env::HOME, self.home.to_string_lossy().into_owned()),
            (env::CLAUDE_SUPERVISOR_PID, std::process::id().to_string()),
            (
                env::CLAUDE_SESSION_CACHE_DIR,
                self.project.to_string_lossy().into_owned(),
            ),
        ]);
        for (k, v) in extra {
            env.set(k, *v);
        }
        let input = HookInput::from_value(json!({"cwd": self.project}));
        Context::new(env, "guards", &input, Duration::from_secs(5))
    }

    fn session(&self, state: &Value) -> PathBuf {
        let dir = self.project.join("sessions/s");
        fs::create_dir_all(&dir).unwrap();
        let mut st = json!({(fields::PID): std::process::id(), (fields::LIFECYCLE): "active"});
        st.as_object_mut()
            .unwrap()
            .extend(state.as_object().unwrap().clone());
        fs::write(dir.join(STATE_FILE), st.to_string()).unwrap();
        dir.join(STATE_FILE)
    }
}

fn input(v: Value) -> HookInput {
    let mut v = v;
    v.as_object_mut()
        .unwrap()
        .entry("transcript_path")
        .or_insert(json!("/t/main.jsonl"));
    HookInput::from_value(v)
}

/// The state key of an agent's last edited file.
fn last_edit(counter_key: &str) -> String {
    format!("{}{counter_key}", fields::LAST_EDIT_FILE_PREFIX)
}

fn heartbeat_rules() -> Value {
    json!([
        {"id": "heartbeat-warn", "trigger": {"type": "perTranscriptToolCount", "condition": {"eq": 3}},
         "payload": {"text": "[warn: heartbeat] §CMD_APPEND_LOG"}, "mode": "inline", "urgency": "allow", "priority": 50},
        {"id": "heartbeat-block", "trigger": {"type": "perTranscriptToolCount", "condition": {"gte": 10}},
         "payload": {"text": "[warn: heartbeat] §CMD_APPEND_LOG"}, "mode": "inline", "urgency": "block", "priority": 5,
         "whitelist": ["Bash(engine log *)", "Task"]}
    ])
}

#[test]
fn no_sessions_dir_is_silent() {
    let f = fixture(&json!([]));
    fs::remove_dir(f.project.join("sessions")).unwrap();
    let out = handle(&input(json!({"tool_name": "Read"})), &f.ctx(&[])).unwrap();
    assert_eq!(out, HookOutput::Silent);
}

#[test]
fn counting_warns_then_blocks_with_enrichment() {
    let f = fixture(&heartbeat_rules());
    let path = f.session(
        &json!({(fields::SKILL): "implement", (fields::CONTEXT_USAGE): 0.42,
        (fields::LOG_TEMPLATE): "/h/assets/TEMPLATE_IMPLEMENTATION_LOG.md"}),
    );
    let ctx = f.ctx(&[]);
    let read = input(json!({"tool_name": "Read", "tool_input": {"file_path": "/elsewhere/x"}}));
    for _ in 0..3 {
        assert_eq!(handle(&read, &ctx).unwrap(), HookOutput::Allow(None));
    }
    let s = state::load(&path).unwrap();
    assert_eq!(s.calls_of("main.jsonl"), 3);
    assert_eq!(s.number(fields::TOOL_CALLS_SINCE_LAST_LOG), Some(3.0));
    assert_eq!(s.str(fields::PRIMARY_TRANSCRIPT_KEY), Some("main.jsonl"));
    let stash = s.stash();
    assert_eq!(stash.len(), 1);
    let content = stash[0].content();
    assert!(
        content.starts_with("[warn: heartbeat] §CMD_APPEND_LOG (3/10) ["),
        "{content}"
    );
    assert!(content.contains("| Context: 42%]\n    $ engine log sessions/s/IMPLEMENTATION_LOG.md <<'EOF' [Template: TEMPLATE_IMPLEMENTATION_LOG.md] ... EOF"), "{content}");
    for _ in 3..9 {
        handle(&read, &ctx).unwrap();
    }
    let HookOutput::Deny(reason) = handle(&read, &ctx).unwrap() else {
        panic!("tenth call is denied")
    };
    assert!(
        reason.starts_with("[block: heartbeat-block]\n[warn: heartbeat] §CMD_APPEND_LOG (10/10)")
    );
    let task = input(json!({"tool_name": "Task", "tool_input": {}}));
    assert_eq!(handle(&task, &ctx).unwrap(), HookOutput::Allow(None));
    let log =
        input(json!({"tool_name": "Bash", "tool_input": {"command": "engine log x <<'EOF'"}}));
    assert_eq!(handle(&log, &ctx).unwrap(), HookOutput::Allow(None));
    let s = state::load(&path).unwrap();
    assert_eq!(s.calls_of("main.jsonl"), 0);
    assert_eq!(s.number(fields::TOOL_CALLS_SINCE_LAST_LOG), Some(0.0));
}

#[test]
fn same_file_edits_count_once_and_sub_agents_count_apart() {
    let f = fixture(&json!([]));
    let path = f.session(&json!({}));
    let ctx = f.ctx(&[]);
    let edit = input(json!({"tool_name": "Edit", "tool_input": {"file_path": "/x/a.rs"}}));
    handle(&edit, &ctx).unwrap();
    handle(&edit, &ctx).unwrap();
    let s = state::load(&path).unwrap();
    assert_eq!(s.calls_of("main.jsonl"), 1);
    assert_eq!(s.str(&last_edit("main.jsonl")), Some("/x/a.rs"));
    let sub = input(
        json!({"tool_name": "Edit", "agent_id": "a1", "tool_input": {"file_path": "/x/a.rs"}}),
    );
    handle(&sub, &ctx).unwrap();
    handle(&sub, &ctx).unwrap();
    let s = state::load(&path).unwrap();
    assert_eq!(s.calls_of("sub:a1"), 1);
    assert_eq!(s.str(&last_edit("sub:a1")), Some("/x/a.rs"));
    assert_eq!(
        s.number(fields::TOOL_CALLS_SINCE_LAST_LOG),
        Some(1.0),
        "parent's copy untouched"
    );
    let other = input(json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}));
    handle(&other, &ctx).unwrap();
    let s = state::load(&path).unwrap();
    assert!(s.get(&last_edit("main.jsonl")).is_none());
    assert_eq!(s.calls_of("main.jsonl"), 2);
}

#[test]
fn no_session_uses_a_none_lifecycle_and_writes_nothing() {
    let gate = json!([{"id": "session-gate", "trigger": {"type": "lifecycle", "condition": {"noActiveSession": true}},
        "payload": {"text": "[block: session] no active session (lifecycle: $lifecycle)."},
        "mode": "inline", "urgency": "block", "priority": 2, "whitelist": ["AskUserQuestion"]}]);
    let f = fixture(&gate);
    let ctx = f.ctx(&[]);
    let out = handle(
        &input(json!({"tool_name": "Grep", "tool_input": {"pattern": "x"}})),
        &ctx,
    )
    .unwrap();
    assert_eq!(
        out,
        HookOutput::Deny(
            "[block: session-gate]\n[block: session] no active session (lifecycle: none).".into()
        )
    );
    let ask = handle(&input(json!({"tool_name": "AskUserQuestion"})), &ctx).unwrap();
    assert_eq!(ask, HookOutput::Allow(None));
    let entries: Vec<_> = fs::read_dir(f.project.join("sessions")).unwrap().collect();
    assert!(entries.is_empty(), "nothing created");
}

#[test]
fn auto_activation_is_opt_in() {
    let f = fixture(&json!([]));
    let ctx = f.ctx(&[(env::PRELOAD_AUTO_ACTIVATE, "1")]);
    handle(
        &input(json!({"tool_name": "Bash", "tool_input": {"command": "ls"}})),
        &ctx,
    )
    .unwrap();
    let made: Vec<_> = fs::read_dir(f.project.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(made.len(), 1);
    assert!(made[0].ends_with("_ADHOC"));
    let s = state::load(&f.project.join("sessions").join(&made[0]).join(STATE_FILE)).unwrap();
    assert_eq!(s.str(fields::SKILL), Some("do"));
    assert_eq!(s.str(fields::LIFECYCLE), Some("active"));
    assert_eq!(
        s.calls_of("main.jsonl"),
        1,
        "the call that created it counts"
    );
}

#[test]
fn a_continue_names_the_session_it_takes_over() {
    use super::call::continued;
    assert_eq!(
        continued("engine session continue sessions/a"),
        Some("sessions/a")
    );
    assert_eq!(
        continued("cd x && engine session continue 'sessions/b' 2>&1"),
        Some("sessions/b")
    );
    assert_eq!(continued("engine session continue"), Some(""));
    assert_eq!(continued("engine session continue <<'EOF'"), Some(""));
    assert_eq!(continued("engine session continued"), None);
    assert_eq!(continued("engine session activate sessions/a"), None);
}
