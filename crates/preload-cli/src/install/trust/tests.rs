use super::*;
use serde_json::json;

/// Hashes and keys the pinned Codex CLI (0.171.0) reported for a `preload install --agent
/// codex` wiring (its app server's `hooks/list`, `currentHash`).
#[test]
fn hashes_are_the_ones_codex_computes() {
    let handler = |command: &str, timeout: u64| json!({"type": "command", "command": command, "timeout": timeout});
    assert_eq!(
        hook_hash(
            "PreToolUse",
            Some("*"),
            &handler("PRELOAD_AGENT=codex /tmp/tx/bin/preload-overflow", 5)
        ),
        "sha256:6f3c351f67f02477b00e51e41f2753e919075cbed44687e869338c645a1776c2"
    );
    assert_eq!(
        hook_hash(
            "SessionStart",
            Some("compact"),
            &handler(
                "PRELOAD_AGENT=codex /tmp/tx/bin/preload-compaction-reread sessionstart",
                10
            )
        ),
        "sha256:98701199db4c3dd9b4f5e6d5fab34134368f1798ac7f3b4a963316ec4ef5fa14"
    );
    assert_eq!(
        hook_hash(
            "UserPromptSubmit",
            None,
            &handler("PRELOAD_AGENT=codex /tmp/tx/bin/preload-prompt-submit", 10)
        ),
        "sha256:af57fb1046fe403c267458e900d8dd8a0191f1b533edf7fe9edc2e1013178d47"
    );
    assert_eq!(event_label("SubagentStart"), "subagent_start");
}

#[test]
fn trust_and_untrust_keep_the_rest_of_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("config.toml");
    let before = "# my settings\nmodel = \"x\" # the model\n\n[profiles.a]\nmodel = \"y\"\n";
    fs::write(&path, before).unwrap();
    let reg = Registration {
        key: "/p/.codex/hooks.json:pre_tool_use:0:0".into(),
        hash: "sha256:ab".into(),
        event: "PreToolUse".into(),
        matcher: "*".into(),
        command: "c".into(),
    };
    let mut config = CodexConfig::read(&path).unwrap();
    assert!(config.trust(&reg).unwrap());
    assert!(config.trust_project(Path::new("/p")).unwrap());
    assert!(config.save().unwrap());
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(before), "{text}");
    assert!(
        text.contains(
            "[hooks.state.\"/p/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:ab\""
        ),
        "{text}"
    );
    assert!(
        text.contains("[projects.\"/p\"]\ntrust_level = \"trusted\""),
        "{text}"
    );
    let mut config = CodexConfig::read(&path).unwrap();
    assert_eq!(config.status(&reg), TrustStatus::Trusted);
    assert!(config.project_trusted(Path::new("/p")));
    assert!(!config.trust(&reg).unwrap());
    assert!(config.untrust(&reg));
    assert!(config.untrust_project(Path::new("/p")));
    assert!(config.save().unwrap());
    assert_eq!(fs::read_to_string(&path).unwrap(), before);
}

#[test]
fn a_project_the_user_trusted_stays_and_a_broken_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("config.toml");
    fs::write(&path, "[projects.\"/p\"]\ntrust_level = \"trusted\"\n").unwrap();
    let mut config = CodexConfig::read(&path).unwrap();
    assert!(!config.trust_project(Path::new("/p")).unwrap());
    assert!(!config.untrust_project(Path::new("/p")));
    fs::write(&path, "model = \n").unwrap();
    assert!(matches!(
        CodexConfig::read(&path),
        Err(TrustError::NotToml { .. })
    ));
}
