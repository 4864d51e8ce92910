//! `preload install --agent codex`: the Codex CLI's `hooks.json` wired from the same table,
//! uninstalled, printed, refused when broken, checked by `preload doctor --agent codex`.

use std::fs;
use std::path::PathBuf;

use preload_cli::install::backup_of;
use preload_cli::install::trust::{CodexConfig, PROJECT_MARK, hook_hash, registrations};
use preload_cli::install::wiring::{all_handlers, our_binary};
use serde_json::Value;

use crate::cli::assert_says;
use preload_test_support::files::assert_contents;
use preload_test_support::sandbox::{Answer, Sandbox, bin, read_json};

fn built() -> PathBuf {
    bin("preload").parent().unwrap().to_path_buf()
}

fn preload(sb: &Sandbox, args: &[&str]) -> Answer {
    sb.run_raw("preload", args, "")
}

fn install(sb: &Sandbox, more: &[&str]) -> Answer {
    for_codex(sb, "install", more)
}

/// `preload doctor --agent codex` with the built binaries as the prefix.
fn doctor(sb: &Sandbox) -> Answer {
    for_codex(sb, "doctor", &[])
}

/// `preload <command> --agent codex --prefix <built binaries> <more>`.
fn for_codex(sb: &Sandbox, command: &str, more: &[&str]) -> Answer {
    let prefix = built();
    let mut args = vec![
        command,
        "--agent",
        "codex",
        "--prefix",
        prefix.to_str().unwrap(),
    ];
    args.extend(more);
    preload(sb, &args)
}

/// Every handler of ours: (event, matcher, command); and whether any is in exec form or
/// filtered.
fn handlers(doc: &Value) -> Vec<(String, String, String)> {
    all_handlers(doc)
        .filter(|(_, _, h)| our_binary(h).is_some())
        .map(|(e, m, h)| {
            assert!(h.get("args").is_none() && h.get("if").is_none(), "{h}");
            assert_eq!(h["type"], "command");
            (
                e.to_owned(),
                m.to_owned(),
                h["command"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn install_wires_the_projects_codex_hooks_and_uninstall_takes_them_out() {
    let sb = Sandbox::bare();
    let file = sb.project.join(".codex/hooks.json");
    let out = install(&sb, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_says(&out.stdout, &["trust"]);
    let doc = read_json(&file);
    let wired = handlers(&doc);
    let prefix = built().display().to_string();
    for (_, _, command) in &wired {
        assert!(
            command.starts_with(&format!("PRELOAD_AGENT=codex {prefix}/preload-")),
            "{command}"
        );
    }
    // Codex allows SessionEnd 3 s.
    let end = &doc["hooks"]["SessionEnd"][0]["hooks"][0];
    assert!(end["timeout"].as_u64().unwrap() <= 3, "{end}");
    // Every event and binary of the table, the 32 SessionStart registrations, no twice.
    let events: std::collections::BTreeSet<&str> = wired.iter().map(|(e, ..)| e.as_str()).collect();
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "Stop",
        "SessionEnd",
        "SubagentStart",
    ] {
        assert!(events.contains(event), "{event}: {events:?}");
    }
    let chunks = wired
        .iter()
        .filter(|(_, _, c)| c.contains("preload-session-start --chunk"))
        .count();
    assert_eq!(chunks, 32);
    let mut unique = wired.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), wired.len(), "a handler twice: {wired:?}");
    // A second install changes nothing; uninstall leaves no file where there was none.
    let before = fs::read_to_string(&file).unwrap();
    let again = install(&sb, &[]);
    assert_says(&again.stdout, &["already wired, nothing changed"]);
    assert_eq!(fs::read_to_string(&file).unwrap(), before);
    let out = preload(&sb, &["uninstall", "--agent", "codex"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!file.exists());
    // Claude Code's settings were never touched.
    assert!(!sb.project.join(".claude/settings.local.json").exists());
}

#[test]
fn install_keeps_foreign_codex_hooks_and_the_global_file_is_codex_home() {
    let (sb, codex_home) = with_codex_home();
    let file = codex_home.join("hooks.json");
    let foreign = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}, "x": 1}"#;
    fs::write(&file, foreign).unwrap();
    assert_eq!(install(&sb, &["--global"]).code, 0);
    let doc = read_json(&file);
    assert!(!handlers(&doc).is_empty());
    assert_eq!(doc["x"], 1);
    assert!(doc.to_string().contains("notify-send done"));
    assert!(!sb.project.join(".codex/hooks.json").exists());
    assert_eq!(
        preload(&sb, &["uninstall", "--agent", "codex", "--global"]).code,
        0
    );
    assert_contents(&file, foreign, "restored byte for byte");
}

#[test]
fn print_changes_nothing_and_a_broken_file_is_refused() {
    let sb = Sandbox::bare();
    let file = sb.project.join(".codex/hooks.json");
    let out = install(&sb, &["--print"]);
    assert_eq!(out.code, 0);
    let printed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(!handlers(&printed).is_empty());
    assert!(!file.exists());
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "{\"hooks\": ").unwrap();
    let out = install(&sb, &[]);
    assert_eq!(out.code, 1);
    assert_says(&out.stderr, &["is not valid JSON"]);
    assert_eq!(fs::read_to_string(&file).unwrap(), "{\"hooks\": ");
    assert!(!backup_of(&file).exists());
    let shims = install(&sb, &["--shims"]);
    assert_eq!(shims.code, 2, "{}", shims.stderr);
}

#[test]
fn install_says_when_codex_turns_hooks_off_and_enable_turns_them_on() {
    let (sb, config) = with_codex_config("model = \"m\"\n\n[features]\nhooks = false\n");
    let out = install(&sb, &[]);
    assert_says(&out.stdout, &["turns hooks off"]);
    let doctor = doctor(&sb);
    assert!(
        doctor.stdout.contains("FAIL  codex:") && doctor.stdout.contains("turns hooks off"),
        "{}",
        doctor.stdout
    );
    let out = install(&sb, &["--enable"]);
    assert_says(&out.stdout, &["hooks turned on"]);
    assert_eq!(
        fs::read_to_string(&config).unwrap(),
        "model = \"m\"\n\n[features]\nhooks = true\n"
    );
    let claude = preload(
        &sb,
        &["install", "--enable", "--prefix", built().to_str().unwrap()],
    );
    assert_eq!(claude.code, 2);
}

#[test]
fn doctor_checks_the_codex_wiring_registration_by_registration() {
    let sb = Sandbox::bare();
    let none = doctor(&sb);
    assert_says(
        &none.stdout,
        &["FAIL  codex: no hooks.json wires the preload hooks"],
    );
    let out = install(&sb, &["--trust-project"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let ok = doctor(&sb);
    assert_says(&ok.stdout, &["wires every registration once"]);
    assert!(!ok.stdout.contains("FAIL  codex"), "{}", ok.stdout);
    let file = sb.project.join(".codex/hooks.json");
    let mut doc = read_json(&file);
    doc["hooks"]["PreToolUse"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    fs::write(&file, doc.to_string()).unwrap();
    let missing = doctor(&sb);
    assert!(
        missing
            .stdout
            .contains("preload-overflow (PreToolUse, matcher *) is not wired"),
        "{}",
        missing.stdout
    );
    assert_eq!(missing.code, 1);
}

/// A sandbox whose `$CODEX_HOME` is a directory of its own, and that directory.
fn with_codex_home() -> (Sandbox, PathBuf) {
    let mut sb = Sandbox::bare();
    let codex_home = sb.root().join("codex-home");
    sb.extra_env
        .push(("CODEX_HOME".into(), codex_home.display().to_string()));
    fs::create_dir_all(&codex_home).unwrap();
    (sb, codex_home)
}

/// `$CODEX_HOME/config.toml` of the sandbox, given `text` first, and the sandbox.
fn with_codex_config(text: &str) -> (Sandbox, PathBuf) {
    let (sb, codex_home) = with_codex_home();
    let config = codex_home.join("config.toml");
    fs::write(&config, text).unwrap();
    (sb, config)
}

const USER_CONFIG: &str =
    "# my settings\nmodel = \"m\" # the model\n\n[features]\nmulti_agent = true\n";

#[test]
fn trust_writes_an_entry_per_registration_and_a_reinstall_keeps_the_trust() {
    let (sb, config) = with_codex_config(USER_CONFIG);
    let file = sb.project.join(".codex/hooks.json");
    let plain = install(&sb, &[]);
    assert!(
        plain.stdout.contains("45 of 45 hooks not trusted") && plain.stdout.contains("--trust"),
        "install without --trust says what to do: {}",
        plain.stdout
    );
    assert_eq!(fs::read_to_string(&config).unwrap(), USER_CONFIG);
    let untrusted = doctor(&sb);
    assert!(
        untrusted.stdout.contains("45 missing (none is trusted)")
            && untrusted
                .stdout
                .contains("is not trusted: Codex does not load"),
        "{}",
        untrusted.stdout
    );
    assert_eq!(untrusted.code, 1);

    let out = install(&sb, &["--trust-project"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_says(&out.stdout, &["45 hooks trusted"]);
    let text = fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with(USER_CONFIG),
        "the user's settings stay first: {text}"
    );
    let read = CodexConfig::read(&config).unwrap();
    let hooks = read_json(&file);
    let wired = registrations(&file, &hooks);
    assert_eq!(wired.len(), 45);
    let real_file = file.canonicalize().unwrap();
    for r in &wired {
        let key = &r.key;
        assert!(
            key.starts_with(&format!("{}:", real_file.display())),
            "{key}"
        );
        let (event, group, handler) = {
            let mut parts = key.rsplitn(3, ':');
            let h: usize = parts.next().unwrap().parse().unwrap();
            let g: usize = parts.next().unwrap().parse().unwrap();
            (r.event.as_str(), g, h)
        };
        let declared = &hooks["hooks"][event][group];
        let hash = hook_hash(
            event,
            declared["matcher"].as_str(),
            &declared["hooks"][handler],
        );
        assert_eq!(read.trusted_hash(key), Some(hash.as_str()), "{key}");
    }
    let project = sb.project.canonicalize().unwrap();
    assert!(
        text.contains(&format!(
            "{PROJECT_MARK}\n[projects.\"{}\"]\ntrust_level = \"trusted\"",
            project.display()
        )),
        "{text}"
    );
    let trusted = doctor(&sb);
    assert_says(&trusted.stdout, &["45 registrations trusted"]);
    assert!(
        !trusted.stdout.contains("FAIL  codex"),
        "{}",
        trusted.stdout
    );

    // A reinstall, with or without --trust, keeps every hook where it was and as it was: the
    // entries stay valid and the file is not rewritten.
    for again in [&[][..], &["--trust"][..], &["--trust-project"][..]] {
        let out = install(&sb, again);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stdout.contains("45 hooks trusted"),
            "{again:?}: {}",
            out.stdout
        );
        assert_eq!(fs::read_to_string(&config).unwrap(), text, "{again:?}");
    }
    assert!(doctor(&sb).stdout.contains("45 registrations trusted"));

    // Uninstall takes out what install trusted, and nothing else.
    let out = preload(&sb, &["uninstall", "--agent", "codex"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_says(
        &out.stdout,
        &["45 hook trust entries and the trust of project"],
    );
    assert_eq!(fs::read_to_string(&config).unwrap(), USER_CONFIG);
}

#[test]
fn doctor_names_a_stale_trust_and_uninstall_keeps_an_entry_it_did_not_write() {
    let (sb, config) = with_codex_config("");
    let file = sb.project.join(".codex/hooks.json");
    assert_eq!(install(&sb, &["--trust"]).code, 0);
    // Someone changed a hook's timeout after it was trusted: Codex sees another definition.
    let mut doc = read_json(&file);
    doc["hooks"]["Stop"][0]["hooks"][0]["timeout"] = serde_json::json!(7);
    fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let stale = doctor(&sb);
    assert!(
        stale.stdout.contains("1 of 45 registrations")
            && stale.stdout.contains(
                "1 stale (trusted with another definition: Stop preload-compaction-reread stop)"
            ),
        "{}",
        stale.stdout
    );
    assert_eq!(stale.code, 1);
    let out = preload(&sb, &["uninstall", "--agent", "codex"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let left = fs::read_to_string(&config).unwrap();
    assert_eq!(left.matches("trusted_hash").count(), 1, "{left}");
    assert!(left.contains(":stop:0:0"), "{left}");
}

#[test]
fn trust_is_refused_where_it_does_not_apply_and_with_a_broken_config() {
    let (sb, config) = with_codex_config("model = \n");
    let out = install(&sb, &["--trust"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_says(&out.stderr, &["is not valid TOML"]);
    assert_eq!(fs::read_to_string(&config).unwrap(), "model = \n");
    assert!(
        !sb.project.join(".codex/hooks.json").exists(),
        "nothing was wired"
    );
    let global = install(&sb, &["--global", "--trust-project"]);
    assert_eq!(global.code, 2, "{}", global.stderr);
    let prefix = built();
    let claude = preload(
        &sb,
        &["install", "--trust", "--prefix", prefix.to_str().unwrap()],
    );
    assert_eq!(claude.code, 2, "{}", claude.stderr);
}
