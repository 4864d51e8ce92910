use super::*;

fn bash(cmd: &str) -> Value {
    json!({"type": "command", "command": cmd, "timeout": 5})
}

#[test]
fn every_binary_of_the_wiring_is_installed() {
    for row in WIRING {
        assert!(BINARIES.contains(&row.binary), "{}", row.binary);
    }
    assert!(!WIRING.iter().any(|w| w.binary == "preload-e2e-auto-answer"));
}

#[test]
fn recognises_ours_and_the_engines() {
    assert_eq!(
        our_binary(&json!({"command": "/x/bin/preload-overflow", "args": []})),
        Some("preload-overflow")
    );
    assert_eq!(our_binary(&bash("/x/other-hook")), None);
    assert_eq!(
        replaced_script(&bash("~/.claude/hooks/session-start-chunk.sh 3 48")),
        Some("session-start-chunk.sh")
    );
    assert_eq!(
        replaced_script(&bash(
            "bash \"$HOME/.claude/hooks/pre-tool-use-overflow-v2.sh\""
        )),
        Some("pre-tool-use-overflow-v2.sh")
    );
    assert_eq!(
        replaced_script(&bash("~/.claude/hooks/stop-notify.sh")),
        None
    );
    assert_eq!(
        replaced_script(&bash("~/.claude/hooks/e2e-auto-answer.sh")),
        None
    );
}

#[test]
fn session_start_gets_n_chunks() {
    let hooks = hooks_value("/b");
    let list = hooks["SessionStart"][0]["hooks"].as_array().unwrap();
    let chunks: Vec<&Value> = list
        .iter()
        .filter(|h| h["command"] == "/b/preload-session-start")
        .collect();
    assert_eq!(chunks.len(), SESSION_START_CHUNKS);
    assert_eq!(
        chunks[3]["args"],
        json!(["--chunk", format!("3/{SESSION_START_CHUNKS}")])
    );
}
