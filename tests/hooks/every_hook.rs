//! What every hook does alike: malformed stdin, a corrupt state or seed and no sessions
//! directory met in silence, files left untouched; `--help` and `--version` answered without
//! reading stdin, under every name the release installs.

use std::fs;

use serde_json::json;

use super::{HOOKS, files, phase_output, session_start, skill_call};
use preload_test_support::pipeline_steps::prompt;
use preload_test_support::sandbox::Sandbox;

#[test]
fn malformed_stdin_fails_open_silently() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({}));
    let before = fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap();
    for bin in HOOKS {
        for bad in [&b"{not json"[..], b"", b"[1,2]", b"\xff\xfe", b"\"text\""] {
            let a = sb.run_raw(bin, &[], bad);
            a.assert_contract();
            assert_eq!(a.stdout, "", "{bin} with {bad:?}");
        }
    }
    assert_eq!(
        fs::read_to_string(sb.sessions.join("s/.state.json")).unwrap(),
        before
    );
    assert!(!sb.seed_path().exists());
}

#[test]
fn corrupt_session_state_is_left_untouched() {
    let sb = Sandbox::new();
    let dir = sb.sessions.join("s");
    fs::create_dir_all(&dir).unwrap();
    let corrupt = format!("{{\"pid\": {}, \"skill\": \"implement\", ", sb.pid);
    fs::write(dir.join(".state.json"), &corrupt).unwrap();
    fs::write(
        sb.root().join(format!("claude-session-cache-{}", sb.pid)),
        format!("{}\n", dir.display()),
    )
    .unwrap();
    let answers = [
        session_start(&sb, "startup"),
        prompt(&sb, "/implement x"),
        skill_call(&sb, "implement"),
        sb.run("preload-templates", json!({"tool_name": "Bash", "tool_input": {"command": "engine session activate sessions/s implement"}})),
        phase_output(&sb, &json!({"stdout": "Phase: 1: Interrogation"})),
    ];
    for a in &answers {
        a.assert_contract();
    }
    assert_eq!(
        fs::read_to_string(dir.join(".state.json")).unwrap(),
        corrupt
    );
    assert!(!dir.join(".state.json.lock").exists());
    // The session start still speaks (standards), recorded in the seed.
    assert!(
        files(&answers[0].context())
            .iter()
            .any(|f| f.ends_with("COMMANDS.md"))
    );
    assert_eq!(
        sb.run(
            "preload-phase-commands",
            json!({"tool_name": "Bash", "tool_response": "Phase: 2: Planning"})
        )
        .stdout,
        ""
    );
}

#[test]
fn corrupt_seed_is_left_untouched() {
    let sb = Sandbox::new();
    fs::create_dir_all(sb.seed_path().parent().unwrap()).unwrap();
    fs::write(sb.seed_path(), "{broken").unwrap();
    for a in [
        session_start(&sb, "startup"),
        prompt(&sb, "/implement x"),
        skill_call(&sb, "implement"),
    ] {
        a.assert_contract();
    }
    assert_eq!(fs::read_to_string(sb.seed_path()).unwrap(), "{broken");
}

#[test]
fn no_sessions_directory_means_silence_and_no_files() {
    let sb = Sandbox::new();
    fs::remove_dir_all(&sb.sessions).unwrap();
    for a in [
        session_start(&sb, "startup"),
        prompt(&sb, "/implement x"),
        skill_call(&sb, "implement"),
        phase_output(&sb, &json!("Phase: 1: Interrogation")),
    ] {
        a.assert_contract();
        assert_eq!(a.stdout, "");
    }
    assert!(!sb.sessions.exists());
    assert!(sb.events().is_empty());
}

#[test]
fn help_and_version_answer_without_stdin() {
    for bin in HOOKS {
        let sb = Sandbox::bare();
        let out = sb.command(bin).arg("--help").output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.starts_with(bin) && text.contains("Env:"),
            "{bin}: {text}"
        );
        let out = sb.command(bin).arg("--version").output().unwrap();
        assert!(String::from_utf8(out.stdout).unwrap().starts_with(bin));
    }
}

/// Every binary of the release, hooks and `preload` alike.
use preload_core::policies::BINARIES;

#[test]
fn every_binary_answers_version_while_stdin_stays_open() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    for name in BINARIES {
        for flag in ["--version", "-V"] {
            // stdin is a pipe nobody writes to or closes: a binary that read it would hang.
            let mut child = Command::new(preload_test_support::sandbox::bin(name))
                .arg(flag)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    child.kill().unwrap();
                    panic!("{name} {flag} waited for stdin");
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{name} {flag}");
            let text = String::from_utf8(out.stdout).unwrap();
            assert_eq!(text, format!("{name} {}\n", env!("CARGO_PKG_VERSION")));
        }
    }
}

/// `preload` started under a hook binary's name (as the release installs it, one binary under
/// every name) is that hook: its version, its help. `make test` runs every hook suite against
/// those names too (`RELEASE_TESTS`).
#[test]
fn preload_started_under_a_hook_name_is_that_hook() {
    use std::os::unix::process::CommandExt;
    for name in BINARIES.iter().filter(|name| **name != "preload") {
        let run = |flag: &str| {
            let out = std::process::Command::new(preload_test_support::sandbox::bin("preload"))
                .arg0(name)
                .arg(flag)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert!(out.status.success(), "{name} {flag}");
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(
            run("--version"),
            format!("{name} {}\n", env!("CARGO_PKG_VERSION"))
        );
        let help = run("--help");
        assert!(help.starts_with(name), "{name}: {help}");
    }
}
