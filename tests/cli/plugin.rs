//! Scenarios: `preload plugin DIR` writes a complete plugin wired by the install table, its
//! launcher links this machine's binary into the plugin's data directory (every registration
//! of SessionStart at once, a plugin moved, a machine it has no binary for), and `preload
//! doctor` sees a plugin of ours that Claude Code would load, alone or beside a settings file
//! that wires the same hooks.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use preload_cli::install::settings::settings_template;
use preload_cli::install::wiring::{BINARIES, SESSION_START_CHUNKS, TEMPLATE_PREFIX};
use preload_cli::plugin::{
    LAUNCHED_EVENTS, PLATFORMS, PLUGIN_BIN, PLUGIN_LINKS, Platform, platform_binary, this_platform,
};
use serde_json::{Value, json};

use crate::cli::assert_says;
use preload_test_support::sandbox::{Answer, Sandbox, read_json};

fn preload(sb: &Sandbox, args: &[&str]) -> Answer {
    sb.run_raw("preload", args, "")
}

/// Writes the plugin into `<sandbox>/<name>` with the binary under test.
fn write_plugin(sb: &Sandbox, name: &str) -> PathBuf {
    let dir = sb.root().join(name);
    let out = preload(sb, &["plugin", dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    dir
}

/// The platforms the plugin in `dir` carries a binary for.
fn carried_all(dir: &Path) -> Vec<&'static Platform> {
    PLATFORMS
        .iter()
        .filter(|p| platform_binary(dir, p).is_file())
        .collect()
}

/// The one platform the plugin in `dir` carries: that of the binary under test, which wrote it
/// (this machine's; under emulation, the emulated machine's).
fn carried(dir: &Path) -> &'static Platform {
    let carried = carried_all(dir);
    assert_eq!(carried.len(), 1, "{}: {carried:?}", dir.display());
    carried[0]
}

/// This process's `PATH`, led by `dir`.
fn path_led_by(dir: &Path) -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", dir.display())
}

/// A directory whose `uname` says what `platform`'s does, to put first on `PATH` where this
/// machine's says otherwise: under emulation (the aarch64 suites) `uname` names the host, and
/// the launcher is shown the machine the binary under test is built for. `None` natively.
fn emulated_uname(sb: &Sandbox, platform: &Platform) -> Option<PathBuf> {
    if this_platform() == Some(platform) {
        return None;
    }
    let dir = sb.root().join(format!("uname-{}", platform.name));
    if !dir.join("uname").exists() {
        fake_uname(&dir, platform.uname[0]);
    }
    Some(dir)
}

/// Writes an executable `dir/uname` that prints `says`, renamed into place whole.
fn fake_uname(dir: &Path, says: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    fs::create_dir_all(dir).unwrap();
    let mut file = tempfile::NamedTempFile::new_in(dir).unwrap();
    write!(file, "#!/bin/sh\necho '{says}'\n").unwrap();
    fs::set_permissions(file.path(), fs::Permissions::from_mode(0o755)).unwrap();
    file.persist(dir.join("uname")).unwrap();
}

/// Runs `program` with `args` and `stdin` as Claude Code runs a plugin's hook: the sandbox's
/// environment with `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA` set, and `PATH` led by
/// [`emulated_uname`] of the platform the plugin carries.
fn run_as_plugin(
    sb: &Sandbox,
    plugin: (&Path, &Path),
    program: &Path,
    args: &[&str],
    stdin: &str,
) -> Answer {
    run_as_plugin_on_path(sb, plugin, program, args, stdin, None)
}

/// [`run_as_plugin`] with `PATH` led by `path_first` when given.
fn run_as_plugin_on_path(
    sb: &Sandbox,
    (root, data): (&Path, &Path),
    program: &Path,
    args: &[&str],
    stdin: &str,
    path_first: Option<&Path>,
) -> Answer {
    let mut cmd = sb.std_command_at(&[], program, true);
    cmd.args(args)
        .env("CLAUDE_PLUGIN_ROOT", root)
        .env("CLAUDE_PLUGIN_DATA", data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let emulated = match path_first {
        Some(_) => None,
        None => carried_all(root)
            .first()
            .and_then(|p| emulated_uname(sb, p)),
    };
    if let Some(dir) = path_first.or(emulated.as_deref()) {
        cmd.env("PATH", path_led_by(dir));
    }
    let mut child = cmd.spawn().unwrap();
    // A hook that does not read its input (one linked to `true`) may be gone before it is
    // written: a closed pipe is that, not a failure.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    Answer::from_output(&child.wait_with_output().unwrap())
}

fn session_start_input(sb: &Sandbox) -> String {
    json!({"hook_event_name": "SessionStart", "source": "startup", "cwd": sb.project,
           "session_id": sb.conversation, "transcript_path": "/tmp/x/test.jsonl"})
    .to_string()
}

/// What each link in `links` points at, by name.
fn link_targets(links: &Path) -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = fs::read_dir(links)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_symlink())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read_link(&p).unwrap())
        })
        .collect();
    found.sort();
    found
}

/// Marks the plugin in `dir` as installed and enabled for the user, as `/plugin install` does.
fn install_and_enable(sb: &Sandbox, dir: &Path) {
    let plugins = sb.home.join(".claude/plugins");
    fs::create_dir_all(&plugins).unwrap();
    let installed = json!({"version": 2, "plugins": {"preload-hooks@preload-hooks": [
        {"scope": "user", "installPath": dir, "version": "0.1.0"}]}});
    fs::write(
        plugins.join("installed_plugins.json"),
        installed.to_string(),
    )
    .unwrap();
    let enabled = json!({"enabledPlugins": {"preload-hooks@preload-hooks": true}});
    fs::write(sb.home.join(".claude/settings.json"), enabled.to_string()).unwrap();
}

#[test]
fn plugin_writes_a_complete_plugin_wired_like_install() {
    let sb = Sandbox::new();
    let dir = sb.root().join("plugin");
    let out = preload(&sb, &["plugin", dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    let manifest = read_json(&dir.join(".claude-plugin/plugin.json"));
    assert_eq!(manifest["name"], "preload-hooks");
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    let market = read_json(&dir.join(".claude-plugin/marketplace.json"));
    assert_eq!(market["plugins"][0]["name"], manifest["name"]);
    assert_eq!(market["plugins"][0]["source"], "./");
    assert!(market["owner"]["name"].is_string());

    // The same table as `preload install`: the committed settings, the once-a-prompt events
    // through the launcher in the plugin's root, the others straight to the links.
    let hooks = read_json(&dir.join("hooks/hooks.json"));
    let template: Value = serde_json::from_str(&settings_template()).unwrap();
    let events = template["hooks"].as_object().unwrap();
    assert_eq!(hooks["hooks"].as_object().unwrap().len(), events.len());
    for (event, groups) in events {
        let dir = if LAUNCHED_EVENTS.contains(&event.as_str()) {
            PLUGIN_BIN
        } else {
            PLUGIN_LINKS
        };
        let expected: Value =
            serde_json::from_str(&groups.to_string().replace(TEMPLATE_PREFIX, dir)).unwrap();
        assert_eq!(hooks["hooks"][event], expected, "{event}");
    }

    // The binary of the machine it runs on, and the launcher under every name: `bin/preload`
    // is the command line with no data directory; a hook runs through the link the launcher
    // makes.
    let platform = carried(&dir);
    let data = sb.root().join("plugin-data");
    for name in BINARIES {
        let out = run_as_plugin(
            &sb,
            (&dir, &data),
            &dir.join("bin").join(name),
            &["--version"],
            "",
        );
        assert_eq!(
            out.stdout.trim(),
            format!("{name} {}", env!("CARGO_PKG_VERSION")),
            "{}",
            out.stderr
        );
    }
    let mut cmd = std::process::Command::new(dir.join("bin/preload"));
    if let Some(uname) = emulated_uname(&sb, platform) {
        cmd.env("PATH", path_led_by(&uname));
    }
    let by_hand = cmd
        .arg("--version")
        .env_remove("CLAUDE_PLUGIN_DATA")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&by_hand.stdout).trim(),
        format!("preload {}", env!("CARGO_PKG_VERSION"))
    );
    assert!(
        fs::read_to_string(dir.join("README.md"))
            .unwrap()
            .contains("--plugin-dir")
    );
    assert_eq!(
        fs::read_to_string(dir.join("guards.json")).unwrap(),
        fs::read_to_string(preload_test_support::sandbox::repo().join("hooks/guards.json"))
            .unwrap()
    );

    // Again into the same directory: fine, nothing else changes.
    let before = fs::read(dir.join("hooks/hooks.json")).unwrap();
    assert_eq!(preload(&sb, &["plugin", dir.to_str().unwrap()]).code, 0);
    assert_eq!(fs::read(dir.join("hooks/hooks.json")).unwrap(), before);

    // A directory holding something else is refused and left alone.
    let other = sb.root().join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("notes.md"), "mine").unwrap();
    let refused = preload(&sb, &["plugin", other.to_str().unwrap()]);
    assert_eq!(refused.code, 1);
    assert_says(&refused.stderr, &["not empty"]);
    assert_eq!(fs::read_dir(&other).unwrap().count(), 1);
}

#[test]
fn doctor_sees_an_enabled_plugin_and_flags_it_beside_settings_wiring() {
    let sb = Sandbox::new();
    let dir = sb.root().join("plugin");
    assert_eq!(preload(&sb, &["plugin", dir.to_str().unwrap()]).code, 0);
    install_and_enable(&sb, &dir);

    let alone = preload(&sb, &["doctor"]);
    assert_eq!(
        alone.code, 0,
        "the plugin alone is healthy:\n{}",
        alone.stdout
    );
    assert!(
        alone.stdout.contains("every hook wired once")
            && alone.stdout.contains("plugin preload-hooks@preload-hooks"),
        "{}",
        alone.stdout
    );
    assert!(
        alone.stdout.contains(&format!(
            "runnable in the plugin's {} (bin/{}/preload",
            dir.display(),
            carried(&dir).name
        )),
        "the plugin's own binary is checked: {}",
        alone.stdout
    );

    let prefix = sb.root().join("bin");
    let installed = preload(&sb, &["install", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    let twice = preload(&sb, &["doctor", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(twice.code, 0, "a warning, not a failure: {}", twice.stdout);
    assert!(
        !twice.stdout.contains("every hook wired once"),
        "{}",
        twice.stdout
    );
    assert_says(
        &twice.stdout,
        &[&format!(
            "warn  settings: the hooks are wired twice: in {} and by the enabled plugin preload-hooks@preload-hooks",
            sb.project.join(".claude/settings.local.json").display()
        )],
    );

    // Disabled for this project: the settings' wiring alone runs again.
    let local = sb.project.join(".claude/settings.local.json");
    let mut doc = read_json(&local);
    doc["enabledPlugins"] = json!({"preload-hooks@preload-hooks": false});
    fs::write(&local, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let once = preload(&sb, &["doctor", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(once.code, 0, "{}", once.stdout);
    assert!(!once.stdout.contains("wired twice"), "{}", once.stdout);
}

#[test]
fn the_launcher_links_every_hook_once_while_all_of_session_start_runs_at_once() {
    let sb = Sandbox::new();
    let dir = write_plugin(&sb, "plugin");
    let data = sb.root().join("data");
    let links = data.join("bin");
    let binary = platform_binary(&dir, carried(&dir));
    let input = session_start_input(&sb);

    // One chunk alone on a fresh data directory: its own link, no stamp yet.
    let launcher = dir.join("bin/preload-session-start");
    let alone = run_as_plugin(&sb, (&dir, &data), &launcher, &["--chunk", "7/32"], &input);
    alone.assert_contract();
    assert_eq!(
        link_targets(&links),
        [("preload-session-start".to_string(), binary.clone())]
    );
    assert!(!links.join(".root").exists());

    // Every registration at once, as Claude Code runs them: each answers as the hook does,
    // and afterwards every hook is linked and the stamp names the plugin.
    fs::remove_dir_all(&data).unwrap();
    let answers: Vec<Answer> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..=SESSION_START_CHUNKS)
            .map(|i| {
                let (dir, data, launcher, input, sb) = (&dir, &data, &launcher, &input, &sb);
                scope.spawn(move || {
                    let chunk = format!("{i}/{SESSION_START_CHUNKS}");
                    run_as_plugin(sb, (dir, data), launcher, &["--chunk", &chunk], input)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for answer in &answers {
        answer.assert_contract();
    }
    let context: String = answers.iter().map(Answer::context).collect();
    assert!(
        context.contains("COMMANDS.md"),
        "the core standards went out: {context}"
    );
    let expected: Vec<(String, PathBuf)> = {
        let mut all: Vec<(String, PathBuf)> = BINARIES
            .iter()
            .map(|n| (n.to_string(), binary.clone()))
            .collect();
        all.sort();
        all
    };
    assert_eq!(link_targets(&links), expected);
    assert_eq!(
        fs::read_to_string(links.join(".root")).unwrap().trim(),
        dir.to_str().unwrap()
    );
    let litter: Vec<String> = fs::read_dir(&links)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n != ".root")
        .collect();
    assert!(litter.is_empty(), "temporary links left: {litter:?}");

    // A tool call's hook is the link itself, with no shell in front.
    let read = json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": sb.project.join("README.md")}, "cwd": sb.project,
        "session_id": sb.conversation, "transcript_path": "/tmp/x/test.jsonl"});
    let call = run_as_plugin(
        &sb,
        (&dir, &data),
        &links.join("preload-overflow"),
        &[],
        &read.to_string(),
    );
    call.assert_contract();

    // The plugin in another place (a new version in the client's cache): the next session
    // start links the hooks to it.
    let moved = write_plugin(&sb, "plugin-2");
    let launcher = moved.join("bin/preload-prompt-submit");
    let prompt = json!({"hook_event_name": "UserPromptSubmit", "prompt": "hello",
        "cwd": sb.project, "session_id": sb.conversation, "transcript_path": "/tmp/x/test.jsonl"});
    run_as_plugin(&sb, (&moved, &data), &launcher, &[], &prompt.to_string()).assert_contract();
    let binary = platform_binary(&moved, carried(&moved));
    assert!(
        link_targets(&links).iter().all(|(_, to)| *to == binary),
        "{:?}",
        link_targets(&links)
    );
    assert_eq!(
        fs::read_to_string(links.join(".root")).unwrap().trim(),
        moved.to_str().unwrap()
    );
}

#[test]
fn the_launcher_picks_each_platform_by_what_uname_says() {
    let sb = Sandbox::new();
    let dir = write_plugin(&sb, "plugin");
    let fake = sb.root().join("fake-uname");
    for platform in PLATFORMS {
        for uname in platform.uname {
            // Only `platform` has a binary (ours, standing in for it), and uname says `uname`.
            for p in PLATFORMS {
                let _ = fs::remove_dir_all(platform_binary(&dir, p).parent().unwrap());
            }
            let stand_in = platform_binary(&dir, platform);
            fs::create_dir_all(stand_in.parent().unwrap()).unwrap();
            fs::copy(preload_test_support::sandbox::bin("preload"), &stand_in).unwrap();
            fake_uname(&fake, uname);
            let data = sb.root().join(format!("data-{}", platform.name));
            let out = run_as_plugin_on_path(
                &sb,
                (&dir, &data),
                &dir.join("bin/preload-session-end"),
                &["--version"],
                "",
                Some(&fake),
            );
            assert_eq!(out.code, 0, "{uname}: {}", out.stderr);
            assert_eq!(
                fs::read_link(data.join("bin/preload-session-end")).unwrap(),
                stand_in,
                "{uname}"
            );
        }
    }
}

#[test]
fn on_a_machine_it_has_no_binary_for_the_hooks_stay_quiet_and_session_start_says_why() {
    let sb = Sandbox::new();
    let dir = write_plugin(&sb, "plugin");
    fs::remove_dir_all(platform_binary(&dir, carried(&dir)).parent().unwrap()).unwrap();
    let data = sb.root().join("data");
    let input = session_start_input(&sb);
    let launcher = dir.join("bin/preload-session-start");

    let first = run_as_plugin(&sb, (&dir, &data), &launcher, &["--chunk", "1/32"], &input);
    assert_eq!(first.code, 1, "{}", first.stderr);
    assert!(
        first.stderr.contains("carries no binary for")
            && first.stderr.contains("(it carries: none)"),
        "{}",
        first.stderr
    );
    assert!(first.stdout.is_empty());
    let other = run_as_plugin(&sb, (&dir, &data), &launcher, &["--chunk", "2/32"], &input);
    assert_eq!(
        (other.code, other.stdout.as_str(), other.stderr.as_str()),
        (0, "", "")
    );

    // The tool calls' hooks are linked to `true`: they answer nothing, and fail nothing.
    let call = run_as_plugin(
        &sb,
        (&dir, &data),
        &data.join("bin/preload-overflow"),
        &[],
        "{}",
    );
    assert_eq!((call.code, call.stdout.as_str()), (0, ""));
    assert!(
        !data.join("bin/.root").exists(),
        "no stamp: the next session looks again"
    );

    // doctor says the same, once.
    install_and_enable(&sb, &dir);
    let doctor = preload(&sb, &["doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert_says(
        &doctor.stdout,
        &[&format!(
            "binaries: the plugin preload-hooks@preload-hooks in {} carries no binary for this machine (it carries: none)",
            dir.display()
        )],
    );
}
