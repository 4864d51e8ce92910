//! Pipeline scenarios around a compaction: what the client puts back itself, what the kept calls
//! carried, and a compaction after a resume.

use super::*;

// Compaction: the client puts back the SKILL.md of a skill it loaded itself.

#[test]
fn after_a_compaction_the_clients_own_skill_reload_counts_as_delivered() {
    let sb = Sandbox::new();
    start_interrogation(&sb);
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    fs::remove_file(&sb.log).unwrap();
    let start = session_start(&sb, "compact");
    start.assert_contract();
    let text = start.context();
    let delivered = preload_core::primitives::delivery::block_paths(&text);
    for name in STANDARDS {
        assert!(
            delivered.iter().any(|f| f.ends_with(name)),
            "{name} in the new context: {delivered:#?}"
        );
        assert_eq!(
            events_for(&sb, "direct-deliver", name).len(),
            1,
            "{name} complete, once"
        );
    }
    assert!(
        !text.contains("/implement/SKILL.md]"),
        "the client reloads the skill it loaded itself: not sent twice"
    );
    assert!(
        text.contains("CMD_INTERROGATE.md]"),
        "the current phase's commands"
    );
    let state = sb.state("test");
    assert!(
        lists(&state, "preloadedFiles", "/implement/SKILL.md"),
        "recorded as in the new context"
    );
    let reload = events_for(&sb, "direct-deliver", "/implement/SKILL.md");
    assert_eq!(reload.len(), 1);
    assert_eq!(reload[0]["source"], "client-skill-reload(compact)");
    sb.assert_no_duplicates();
}

#[test]
fn after_a_compaction_a_skill_the_client_never_loaded_is_delivered() {
    let sb = Sandbox::new();
    session_start(&sb, "startup").assert_contract();
    for a in activate(&sb, "test", "implement") {
        a.assert_contract();
    }
    fs::remove_file(&sb.log).unwrap();
    let text = session_start(&sb, "compact").context();
    assert!(text.contains("/implement/SKILL.md]"), "{text}");
}

#[test]
fn after_a_compaction_the_files_of_the_call_the_client_keeps_are_not_sent_again() {
    let sb = Sandbox::new();
    start_interrogation(&sb);
    drain(&sb, "test", 30);
    // The last tool call before the compaction carries a directive; the client keeps that call
    // (and what the hooks added to it) in the new context.
    let read = json!({"file_path": sb.project.join("packages/estimate/src/total.ts")});
    let verdict = sb.run(
        "preload-overflow",
        json!({"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": read,
            "tool_use_id": "toolu_last"}),
    );
    assert_eq!(verdict.decision(), "allow");
    let carried = sb.run(
        "preload-injections",
        json!({"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": read,
            "tool_use_id": "toolu_last"}),
    );
    let kept = preload_core::primitives::delivery::block_paths(&carried.context());
    assert!(!kept.is_empty(), "the call carried files");
    let text = session_start(&sb, "compact").context();
    for file in &kept {
        assert!(
            !preload_core::primitives::delivery::block_paths(&text).contains(file),
            "{file} is in the new context already"
        );
        assert!(strings(&sb.state("test"), "preloadedFiles").contains(file));
    }
}

// A conversation resumed by another client process, then compacted (`claude -p /compact
// --resume <id>`, or a resumed conversation over the window compacted at once).

#[test]
fn after_a_resume_a_compaction_delivers_the_skill_the_new_client_never_loaded() {
    let sb = Sandbox::new();
    start_interrogation(&sb);
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    // The resumed client process replays the conversation; it does not hold the skill the
    // first one loaded, and puts nothing back after a compaction.
    session_start(&sb, "resume").assert_contract();
    fs::remove_file(&sb.log).unwrap();
    let text = session_start(&sb, "compact").context();
    assert!(
        text.contains("/implement/SKILL.md]"),
        "the skill's protocol is in the new context: {}",
        &text[..text.len().min(400)]
    );
    assert!(
        events_for(&sb, "direct-deliver", "/implement/SKILL.md")
            .iter()
            .all(|e| e["source"] != "client-skill-reload(compact)"),
        "not counted as the client's reload"
    );
}

#[test]
fn a_resumed_client_recalls_the_skill_an_earlier_compaction_put_back() {
    let mut sb = Sandbox::new();
    start_interrogation(&sb);
    tool_call(&sb, "Read", json!({"file_path": "x"}));
    // The first process compacts: the client puts its skill back (and records that in the
    // transcript).
    let first = session_start(&sb, "compact").context();
    assert!(
        !first.contains("/implement/SKILL.md]"),
        "the client's reload"
    );
    // A resumed process recalls that re-injection and puts the skill back again itself. (Its
    // second compaction is a new SessionStart event: a cache of its own.)
    session_start(&sb, "resume").assert_contract();
    fs::remove_file(&sb.log).unwrap();
    let cache = sb.root().join("second-compaction-cache");
    sb.extra_env.push((
        "PRELOAD_CACHE_DIR".into(),
        cache.to_string_lossy().into_owned(),
    ));
    let text = session_start(&sb, "compact").context();
    assert!(
        !text.contains("/implement/SKILL.md]"),
        "the client puts the recalled skill back: not sent twice"
    );
    let reload = events_for(&sb, "direct-deliver", "/implement/SKILL.md");
    assert_eq!(reload.len(), 1);
    assert_eq!(reload[0]["source"], "client-skill-reload(compact)");
}

#[test]
fn a_compaction_right_after_a_resume_keeps_what_the_resume_delivered() {
    let sb = Sandbox::new();
    start_interrogation(&sb);
    drain(&sb, "test", 30);
    fs::write(
        sb.sessions.join("test/IMPLEMENTATION_LOG.md"),
        "## [2026-01-01 10:00:00] Setup\n*   **Mode**: general\n",
    )
    .unwrap();
    let resumed = session_start(&sb, "resume").context();
    assert!(resumed.contains("/IMPLEMENTATION_LOG.md]"), "{resumed}");
    // Compacted before the resumed client's first request: the client puts the resume's
    // SessionStart contexts after the summary, in the new context.
    let text = session_start(&sb, "compact").context();
    assert!(
        !text.contains("/IMPLEMENTATION_LOG.md]"),
        "the log the resume delivered is in the new context already"
    );
    assert!(
        lists(
            &sb.state("test"),
            "preloadedFiles",
            "/IMPLEMENTATION_LOG.md"
        ),
        "recorded as in the new context"
    );
}

#[test]
fn after_a_compaction_files_of_an_earlier_call_are_not_counted_as_kept() {
    let sb = Sandbox::new();
    start_interrogation(&sb);
    drain(&sb, "test", 30);
    let call = |tool: &str, input: &serde_json::Value, id: &str| {
        let verdict = sb.run(
            "preload-overflow",
            json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input,
                "tool_use_id": id}),
        );
        assert_eq!(verdict.decision(), "allow");
        sb.run(
            "preload-injections",
            json!({"hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": input,
                "tool_use_id": id}),
        )
    };
    let read = json!({"file_path": sb.project.join("packages/estimate/src/total.ts")});
    let mut carried =
        preload_core::primitives::delivery::block_paths(&call("Read", &read, "toolu_a").context());
    assert!(!carried.is_empty(), "the first call carried directives");
    // Later calls, up to one that carries no file; the compaction happens after it, so the
    // client keeps that call, not the earlier ones.
    let ls = json!({"command": "ls"});
    let mut quiet = false;
    for i in 0..10 {
        let files = preload_core::primitives::delivery::block_paths(
            &call("Bash", &ls, &format!("toolu_b{i}")).context(),
        );
        if files.is_empty() {
            quiet = true;
            break;
        }
        carried.extend(files);
    }
    assert!(quiet, "a call that carries no file");
    let resent =
        preload_core::primitives::delivery::block_paths(&session_start(&sb, "compact").context());
    let preloaded = strings(&sb.state("test"), "preloadedFiles");
    for file in carried.iter().filter(|f| !resent.contains(f)) {
        assert!(
            !preloaded.contains(file),
            "{file} went with an earlier call: not in the new context"
        );
    }
}
