//! Scenarios: install, uninstall, the committed wiring and the shims (doctor, status and report,
//! which read what install wrote, are in `doctor.rs`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use preload_cli::install::backup_of;
use preload_cli::install::settings::settings_template;
use preload_cli::install::shims::shim_text;
use preload_cli::install::wiring::all_handlers;
use preload_cli::install::wiring::{
    BINARIES, SESSION_START_CHUNKS, SHIMS, TEMPLATE_PREFIX, our_binary,
};
use serde_json::{Value, json};

use crate::cli::assert_says;
use preload_test_support::files::assert_contents;
use preload_test_support::sandbox::{Answer, Sandbox, bin, read_json, repo};

mod codex;
mod files;

/// CONTRACT section 2: every wired binary and its event (the e2e hook is never wired).
const CONTRACT_EVENTS: &[(&str, &[&str])] = &[
    ("preload-session-start", &["SessionStart"]),
    ("preload-prompt-submit", &["UserPromptSubmit"]),
    ("preload-templates", &["PostToolUse"]),
    ("preload-phase-commands", &["PostToolUse"]),
    ("preload-overflow", &["PreToolUse"]),
    ("preload-injections", &["PostToolUse"]),
    ("preload-session-end", &["SessionEnd"]),
    ("preload-subagent-start", &["SubagentStart"]),
    (
        "preload-compaction-reread",
        &[
            "PreCompact",
            "PreToolUse",
            "Stop",
            "PostToolUse",
            "SessionStart",
        ],
    ),
];

/// A sandbox without the bundled wiring, and where its project's Claude Code settings go.
pub(crate) fn bare_with_settings() -> (Sandbox, PathBuf) {
    let sb = Sandbox::bare();
    let settings = sb.project.join(".claude/settings.local.json");
    (sb, settings)
}

/// The directory of the built binaries: `--prefix` there installs without copying.
pub(crate) fn built() -> PathBuf {
    bin("preload").parent().unwrap().to_path_buf()
}

pub(crate) fn bash_entry(script: &str) -> Value {
    json!({"type": "command", "command": format!("~/.claude/hooks/{script}"), "timeout": 5})
}

/// Settings as the engine's installer leaves them, plus foreign hooks and other keys.
pub(crate) fn engine_settings() -> String {
    let chunks: Vec<Value> = (0..48)
        .map(|i| json!({"type": "command", "command": format!("~/.claude/hooks/session-start-chunk.sh {i} 48"), "timeout": 30}))
        .collect();
    let doc = json!({
        "permissions": {"allow": ["Bash(git *)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [
                bash_entry("pre-tool-use-overflow-v2.sh"),
                bash_entry("pre-tool-use-one-strike.sh"),
            ]}],
            "PostToolUse": [{"matcher": "*", "hooks": [
                bash_entry("post-tool-use-injections.sh"),
                bash_entry("post-tool-use-phase-commands.sh"),
                bash_entry("post-tool-use-templates.sh"),
                bash_entry("post-tool-use-details-log.sh"),
            ]}],
            "UserPromptSubmit": [{"hooks": [
                bash_entry("user-prompt-working.sh"),
                bash_entry("user-prompt-submit-session-gate.sh"),
            ]}],
            "SessionStart": [{"hooks": chunks}],
            "Notification": [{"matcher": "idle_prompt", "hooks": [bash_entry("notification-idle.sh")]}]
        },
        "statusLine": {"type": "command", "command": "x"}
    });
    format!("{}\n", serde_json::to_string_pretty(&doc).unwrap())
}

pub(crate) fn preload(sb: &Sandbox, args: &[&str]) -> Answer {
    sb.run_raw("preload", args, "")
}

/// `preload install` run in `dir`, which must succeed: its stdout.
pub(crate) fn install_in(sb: &Sandbox, dir: &Path) -> String {
    preload_in(sb, dir, &["install", "--prefix", built().to_str().unwrap()])
}

/// `preload uninstall` run in `dir`, which must succeed: its stdout.
pub(crate) fn uninstall_in(sb: &Sandbox, dir: &Path) -> String {
    preload_in(sb, dir, &["uninstall"])
}

fn preload_in(sb: &Sandbox, dir: &Path, args: &[&str]) -> String {
    let out = sb
        .command("preload")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "preload {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["command"].as_str().map(str::to_owned))
        .collect()
}

/// (event, binary) of every handler of ours in a settings document.
fn wired(settings: &Value) -> BTreeSet<(String, String)> {
    all_handlers(settings)
        .filter_map(|(event, _, h)| our_binary(h).map(|b| (event.to_owned(), b.to_owned())))
        .collect()
}

fn assert_contract_wiring(settings: &Value, what: &str) {
    let wired = wired(settings);
    for (binary, events) in CONTRACT_EVENTS {
        for event in *events {
            assert!(
                wired.contains(&((*event).to_owned(), (*binary).to_owned())),
                "{what}: {binary} not wired to {event}"
            );
        }
    }
    assert!(
        !wired.iter().any(|(_, b)| b == "preload-e2e-auto-answer"),
        "{what}: the e2e hook is for test sessions only"
    );
    for (event, binary) in &wired {
        let allowed = CONTRACT_EVENTS
            .iter()
            .find(|(b, _)| b == binary)
            .map(|(_, e)| *e)
            .unwrap_or_default();
        assert!(
            allowed.contains(&event.as_str()),
            "{what}: {binary} wired to unexpected {event}"
        );
    }
}

#[test]
fn install_twice_is_idempotent_keeps_backup_and_foreign_hooks() {
    let (sb, settings) = bare_with_settings();
    let original = engine_settings();
    fs::write(&settings, &original).unwrap();
    let prefix = sb.root().join("bin");
    let prefix_s = prefix.to_str().unwrap();

    let first = preload(&sb, &["install", "--prefix", prefix_s]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    for name in BINARIES {
        let meta = fs::metadata(prefix.join(name)).unwrap();
        assert!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0,
            "{name} executable"
        );
    }
    let backup = backup_of(&settings);
    assert_contents(&backup, &original, "backup is the file before install");
    let after = fs::read_to_string(&settings).unwrap();
    let doc: Value = serde_json::from_str(&after).unwrap();

    // Other keys, in their order; foreign hooks kept; replaced bash hooks gone.
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["permissions", "hooks", "statusLine"]);
    let pre = commands(&doc, "PreToolUse");
    assert!(pre.contains(&"~/.claude/hooks/pre-tool-use-one-strike.sh".to_owned()));
    assert!(!pre.iter().any(|c| c.contains("overflow-v2")));
    let post = commands(&doc, "PostToolUse");
    assert!(post.contains(&"~/.claude/hooks/post-tool-use-details-log.sh".to_owned()));
    assert!(
        !post.iter().any(|c| c.contains("post-tool-use-templates.sh")
            || c.contains("post-tool-use-injections.sh"))
    );
    assert!(
        commands(&doc, "UserPromptSubmit")
            .contains(&"~/.claude/hooks/user-prompt-working.sh".to_owned())
    );
    assert_eq!(
        commands(&doc, "Notification"),
        ["~/.claude/hooks/notification-idle.sh"]
    );
    let starts = commands(&doc, "SessionStart");
    assert!(
        !starts.iter().any(|c| c.contains("session-start-chunk.sh")),
        "the 48 bash chunks are replaced"
    );
    let native_chunks = starts
        .iter()
        .filter(|c| c.ends_with("/preload-session-start"))
        .count();
    assert_eq!(native_chunks, SESSION_START_CHUNKS);

    // Exec form: absolute command, args array, timeout in seconds.
    for (_, _, h) in all_handlers(&doc) {
        if our_binary(h).is_some() {
            let cmd = h["command"].as_str().unwrap();
            assert!(cmd.starts_with(prefix_s), "{cmd}");
            assert!(h["args"].is_array(), "exec form needs args: {h}");
            let t = h["timeout"].as_u64().unwrap();
            assert!((1..=60).contains(&t), "timeout in seconds: {t}");
        }
    }
    assert_contract_wiring(&doc, "preload install");

    let mtime = fs::metadata(&settings).unwrap().modified().unwrap();
    let second = preload(&sb, &["install", "--prefix", prefix_s]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_contents(&settings, &after, "second run is byte-identical");
    assert_eq!(
        fs::metadata(&settings).unwrap().modified().unwrap(),
        mtime,
        "not even rewritten"
    );
    assert_contents(&backup, &original, "backup still the pre-install file");
    // The binaries are not copied again.
    assert_says(&second.stdout, &["all up to date"]);
}

#[test]
fn uninstall_restores_the_backup_when_nothing_else_changed() {
    let (sb, settings) = bare_with_settings();
    let original = engine_settings().replace("  ", "    ");
    fs::write(&settings, &original).unwrap();
    let prefix = built();
    let a = preload(&sb, &["install", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    let installed = fs::read_to_string(&settings).unwrap();
    assert!(
        installed.contains("\n    \"hooks\""),
        "the file's 4-space indent is kept"
    );
    let b = preload(&sb, &["uninstall"]);
    assert_eq!(b.code, 0, "{}", b.stderr);
    assert_eq!(fs::read_to_string(&settings).unwrap(), original);
    assert!(!backup_of(&settings).exists(), "the backup is consumed");
}

#[test]
fn uninstall_after_other_edits_removes_only_ours_and_puts_bash_back() {
    let (sb, settings) = bare_with_settings();
    fs::write(&settings, engine_settings()).unwrap();
    let prefix = built();
    assert_eq!(
        preload(&sb, &["install", "--prefix", prefix.to_str().unwrap()]).code,
        0
    );
    // The user adds a hook and a key after installing.
    let mut doc = read_json(&settings);
    doc["hooks"]["Stop"] = json!([{"hooks": [bash_entry("stop-notify.sh")]}]);
    doc["model"] = json!("opus");
    fs::write(&settings, serde_json::to_string_pretty(&doc).unwrap()).unwrap();

    let out = preload(&sb, &["uninstall"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = read_json(&settings);
    assert!(wired(&doc).is_empty(), "no handler of ours left");
    assert_eq!(commands(&doc, "Stop"), ["~/.claude/hooks/stop-notify.sh"]);
    assert_eq!(doc["model"], "opus");
    let pre = commands(&doc, "PreToolUse");
    assert_eq!(
        pre,
        [
            "~/.claude/hooks/pre-tool-use-overflow-v2.sh",
            "~/.claude/hooks/pre-tool-use-one-strike.sh"
        ]
    );
    assert_eq!(
        commands(&doc, "SessionStart").len(),
        48,
        "the bash chunks are back"
    );
    let original: Value = serde_json::from_str(&engine_settings()).unwrap();
    assert_eq!(
        commands(&doc, "PostToolUse"),
        commands(&original, "PostToolUse")
    );
}

#[test]
fn install_into_a_project_without_settings_and_back() {
    let (sb, settings) = bare_with_settings();
    let sub = sb.project.join("packages/x");
    fs::create_dir_all(&sub).unwrap();
    let said = install_in(&sb, &sub);
    assert_contract_wiring(&read_json(&settings), "fresh project");
    assert!(
        said.contains("wired (a new file: uninstall removes it)") && !said.contains("backup"),
        "a first install into no file keeps no backup and says so: {said}"
    );
    assert!(
        !backup_of(&settings).exists(),
        "no backup stands for no file"
    );
    let out = preload(&sb, &["uninstall"]);
    assert_eq!(out.code, 0);
    assert_says(&out.stdout, &["removed (there was none before install)"]);
    assert!(!settings.exists(), "the file did not exist before");
}

#[test]
fn uninstall_removes_the_default_rules_install_wrote_and_keeps_edited_ones() {
    let sb = Sandbox::bare();
    let guards = sb.home.join(".claude/engine/guards.json");
    let prefix = built();
    let install = |sb: &Sandbox| preload(sb, &["install", "--prefix", prefix.to_str().unwrap()]);
    assert!(install(&sb).stdout.contains("the default rules written to"));
    assert!(guards.exists());
    let out = preload(&sb, &["uninstall"]);
    assert_says(
        &out.stdout,
        &[&format!("rules: {} removed", guards.display())],
    );
    assert!(!guards.exists(), "unchanged since install: removed");
    assert_eq!(install(&sb).code, 0);
    fs::write(&guards, "[]\n").unwrap();
    let out = preload(&sb, &["uninstall"]);
    assert_says(&out.stdout, &["kept: it changed since install"]);
    assert_eq!(fs::read_to_string(&guards).unwrap(), "[]\n");
    // The engine's own rules, never written by install, stay.
    assert_eq!(install(&sb).code, 0);
    let out = preload(&sb, &["uninstall"]);
    assert!(!out.stdout.contains("rules:"), "{}", out.stdout);
    assert!(guards.exists());
}

#[test]
fn an_empty_settings_file_comes_back_empty() {
    let (sb, settings) = bare_with_settings();
    fs::write(&settings, "").unwrap();
    assert_eq!(
        preload(&sb, &["install", "--prefix", built().to_str().unwrap()]).code,
        0
    );
    assert_contract_wiring(&read_json(&settings), "empty file");
    assert_eq!(fs::read(backup_of(&settings)).unwrap(), b"");
    let out = preload(&sb, &["uninstall"]);
    assert_eq!(out.code, 0);
    assert_says(&out.stdout, &["restored from the backup"]);
    assert_eq!(
        fs::read(&settings).unwrap(),
        b"",
        "the empty file is back, empty"
    );
}

#[test]
fn install_names_doctor_by_its_full_path_when_the_prefix_is_not_on_path() {
    let sb = Sandbox::bare();
    let prefix = sb.root().join("engine-bin");
    let out = preload(&sb, &["install", "--prefix", prefix.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("binaries: 12 copied to"),
        "{}",
        out.stdout
    );
    let last = out.stdout.lines().last().unwrap_or("");
    assert!(
        last.starts_with(&format!("check with: {}/preload doctor", prefix.display()))
            && last.contains(&format!("export PATH=\"{}:$PATH\"", prefix.display())),
        "{last}"
    );
    let on_path = sb
        .command("preload")
        .args(["install", "--prefix", prefix.to_str().unwrap()])
        .env("PATH", format!("{}:/usr/bin:/bin", prefix.display()))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&on_path.stdout);
    assert_eq!(
        said.lines().last(),
        Some("check with: preload doctor"),
        "{said}"
    );
}

#[test]
fn install_refuses_a_corrupt_settings_file() {
    let (sb, settings) = bare_with_settings();
    fs::write(&settings, "{\"hooks\": ").unwrap();
    let out = preload(&sb, &["install", "--prefix", built().to_str().unwrap()]);
    assert_eq!(out.code, 1);
    assert_says(&out.stderr, &["is not valid JSON"]);
    assert_eq!(fs::read_to_string(&settings).unwrap(), "{\"hooks\": ");
    assert!(!backup_of(&settings).exists());
}

#[test]
fn committed_wiring_and_shims_match_the_table() {
    let committed = fs::read_to_string(repo().join("hooks/settings.json")).unwrap();
    assert_eq!(
        committed,
        settings_template(),
        "hooks/settings.json is stale: regenerate it from the wiring table"
    );
    let doc: Value = serde_json::from_str(&committed).unwrap();
    assert_contract_wiring(&doc, "hooks/settings.json");
    let printed = Sandbox::bare();
    let out = preload(
        &printed,
        &["install", "--print", "--prefix", "/opt/preload"],
    );
    let printed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        serde_json::to_string(&printed)
            .unwrap()
            .replace("/opt/preload", TEMPLATE_PREFIX),
        serde_json::to_string(&doc).unwrap(),
        "preload install writes the same wiring"
    );
    let mut names = BTreeSet::new();
    for shim in SHIMS {
        let path = repo().join("hooks/shims").join(shim.script);
        assert!(path.is_file(), "missing shim {}", path.display());
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text, shim_text(shim, None), "{} is stale", shim.script);
        assert_eq!(text.lines().filter(|l| l.starts_with("exec ")).count(), 1);
        names.insert(shim.script.to_owned());
    }
    let on_disk: BTreeSet<String> = fs::read_dir(repo().join("hooks/shims"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(on_disk, names, "one shim per replaced script, nothing else");
}

#[test]
fn shims_replace_the_engine_scripts_and_come_back_out() {
    let sb = Sandbox::bare();
    let engine_hooks = sb.home.join(".claude/engine/hooks");
    let hooks = sb.home.join(".claude/hooks");
    fs::create_dir_all(&engine_hooks).unwrap();
    fs::create_dir_all(&hooks).unwrap();
    for name in ["session-start-chunk.sh", "pre-tool-use-overflow-v2.sh"] {
        fs::write(engine_hooks.join(name), "#!/bin/bash\necho bash\n").unwrap();
        std::os::unix::fs::symlink(engine_hooks.join(name), hooks.join(name)).unwrap();
    }
    let settings = sb.project.join(".claude/settings.local.json");
    fs::write(&settings, engine_settings()).unwrap();
    let prefix = built();
    let out = preload(
        &sb,
        &["install", "--shims", "--prefix", prefix.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let chunk = fs::read_to_string(hooks.join("session-start-chunk.sh")).unwrap();
    assert!(
        chunk.contains(&format!(
            "exec \"{}/preload-session-start\" --chunk",
            prefix.display()
        )),
        "{chunk}"
    );
    assert_eq!(
        fs::read_to_string(engine_hooks.join("session-start-chunk.sh")).unwrap(),
        "#!/bin/bash\necho bash\n",
        "never written through the symlink"
    );
    assert!(
        fs::symlink_metadata(hooks.join("session-start-chunk.sh.preload-backup"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_contents(
        &settings,
        &engine_settings(),
        "with shims the bash wiring stays as it is",
    );
    // The shim runs the binary: `--chunk 0/48`.
    let run = std::process::Command::new("bash")
        .arg(hooks.join("session-start-chunk.sh"))
        .args(["0", "48"])
        .env("HOME", &sb.home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(run.status.success());

    assert_eq!(preload(&sb, &["uninstall"]).code, 0);
    let link = fs::symlink_metadata(hooks.join("session-start-chunk.sh")).unwrap();
    assert!(
        link.file_type().is_symlink(),
        "the engine's symlink is back"
    );
    assert!(!hooks.join("session-start-chunk.sh.preload-backup").exists());
}

#[test]
fn shims_with_no_engine_script_to_replace_change_nothing_and_fail() {
    let sb = Sandbox::bare();
    // A git repository, whose exclude file install would otherwise edit.
    let info = sb.project.join(".git/info");
    fs::create_dir_all(&info).unwrap();
    fs::write(sb.project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(info.join("exclude"), "# mine\n").unwrap();
    let settings = sb.project.join(".claude/settings.local.json");
    fs::write(&settings, engine_settings()).unwrap();
    let prefix = sb.root().join("bin");
    let out = preload(
        &sb,
        &["install", "--shims", "--prefix", prefix.to_str().unwrap()],
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("nothing to replace") && out.stderr.contains("nothing changed"),
        "{}",
        out.stderr
    );
    assert_eq!(
        fs::read_to_string(info.join("exclude")).unwrap(),
        "# mine\n"
    );
    assert_eq!(fs::read_to_string(&settings).unwrap(), engine_settings());
    assert!(!prefix.exists(), "no binary copied");
}

/// The docs and the Makefile count the binaries install copies as the table does.
#[test]
fn the_docs_count_the_binaries_install_copies() {
    const WORDS: [&str; 16] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen",
    ];
    let count = preload_cli::install::wiring::BINARIES.len();
    let right = format!("{} binaries", WORDS[count]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    for file in ["docs/install.md", "README.md", "Makefile"] {
        let text = fs::read_to_string(root.join(file)).unwrap();
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for word in WORDS {
            let said = format!("{word} binaries");
            if said != right && flat.contains(&format!(" {said}")) {
                wrong.push(format!("{file} says {said}; there are {count}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let install = fs::read_to_string(root.join("docs/install.md")).unwrap();
    assert!(install.contains(&right), "docs/install.md says {right}");
    assert!(
        install.contains("[--shims | --dispatch]"),
        "the synopsis names --dispatch"
    );
}

/// `make test` installs the pinned client first when it can, and without npm says so and goes
/// on.
#[test]
fn make_test_installs_the_pinned_client_when_it_can_and_goes_on_without_npm() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let makefile = fs::read_to_string(root.join("Makefile")).unwrap();
    let recipe = makefile.split("\ntest:\n").nth(1).unwrap();
    assert!(
        recipe
            .lines()
            .next()
            .is_some_and(|l| l.contains("tests/e2e/setup.sh --when-possible")),
        "make test begins with the client's setup: {recipe:.200}"
    );
    // A PATH with what the script needs but no npm.
    let bin = tempfile::tempdir().unwrap();
    for tool in ["bash", "dirname", "sed", "grep", "env"] {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{tool} on this machine"));
        std::os::unix::fs::symlink(found, bin.path().join(tool)).unwrap();
    }
    let out = std::process::Command::new(bin.path().join("bash"))
        .arg(root.join("tests/e2e/setup.sh"))
        .arg("--when-possible")
        .env("PATH", bin.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("no npm here"), "{text}");
}

/// The release is one binary under every name (`make release`): installed, the names are one
/// file again, hard links to the first copy, and a second install writes nothing.
#[test]
fn one_binary_under_every_name_is_installed_as_one_file() {
    use preload_cli::install::binaries::install_binaries;
    use preload_core::policies::BINARIES;
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let (from, prefix) = (tmp.path().join("release"), tmp.path().join("bin"));
    fs::create_dir_all(&from).unwrap();
    let release = |text: &str| {
        let one = from.join("preload.new");
        fs::write(&one, text).unwrap();
        for name in BINARIES {
            let _ = fs::remove_file(from.join(name));
            fs::hard_link(&one, from.join(name)).unwrap();
        }
        fs::remove_file(one).unwrap();
    };
    let inodes = || -> std::collections::BTreeSet<u64> {
        BINARIES
            .iter()
            .map(|name| fs::metadata(prefix.join(name)).unwrap().ino())
            .collect()
    };
    release("#!/bin/sh\necho one\n");
    assert_eq!(install_binaries(&from, &prefix).unwrap(), BINARIES.len());
    assert_eq!(inodes().len(), 1, "one file under every name");
    assert_eq!(
        install_binaries(&from, &prefix).unwrap(),
        0,
        "nothing changed"
    );
    // A new release: every name gets it, still one file, and the old file is left whole for a
    // hook still running it.
    let old = fs::File::open(prefix.join("preload")).unwrap();
    release("#!/bin/sh\necho two\n");
    assert_eq!(install_binaries(&from, &prefix).unwrap(), BINARIES.len());
    assert_eq!(inodes().len(), 1);
    for name in BINARIES {
        assert_eq!(
            fs::read_to_string(prefix.join(name)).unwrap(),
            "#!/bin/sh\necho two\n"
        );
    }
    assert!(!inodes().contains(&old.metadata().unwrap().ino()));
}

/// A directory with `preload` alone (an npm platform package: npm installs no hard links) is
/// installed under every name, one file.
#[test]
fn preload_alone_is_installed_under_every_name() {
    use preload_cli::install::binaries::install_binaries;
    use preload_core::policies::BINARIES;
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let (from, prefix) = (tmp.path().join("package/bin"), tmp.path().join("bin"));
    fs::create_dir_all(&from).unwrap();
    fs::write(from.join("preload"), "#!/bin/sh\necho one\n").unwrap();
    assert_eq!(install_binaries(&from, &prefix).unwrap(), BINARIES.len());
    let inodes: BTreeSet<u64> = BINARIES
        .iter()
        .map(|name| fs::metadata(prefix.join(name)).unwrap().ino())
        .collect();
    assert_eq!(inodes.len(), 1, "one file under every name");
    assert_eq!(
        fs::read_to_string(prefix.join("preload-overflow")).unwrap(),
        "#!/bin/sh\necho one\n"
    );
    fs::remove_file(from.join("preload")).unwrap();
    let err = install_binaries(&from, &prefix).unwrap_err();
    assert!(err.to_string().contains("missing in"), "{err}");
}
