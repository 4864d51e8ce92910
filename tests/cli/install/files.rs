//! What `preload install` and `preload uninstall` do to the project's own files: a settings file
//! that is not one JSON object is refused and left byte for byte, and every write of the
//! settings file keeps the file as it was first.

use std::fs;
use std::path::{Path, PathBuf};

use preload_cli::install::{backup_of, previous_of};
use serde_json::{Value, json};

use super::{built, install_in, preload, uninstall_in};
use crate::cli::assert_says;
use preload_test_support::sandbox::{Answer, Sandbox, read_json};

fn settings_of(sb: &Sandbox) -> PathBuf {
    sb.project.join(".claude/settings.local.json")
}

/// A project whose settings file holds `bytes`, and that file.
fn with_settings(bytes: impl AsRef<[u8]>) -> (Sandbox, PathBuf) {
    let sb = Sandbox::bare();
    let settings = settings_of(&sb);
    fs::write(&settings, bytes).unwrap();
    (sb, settings)
}

/// Settings files that cannot be wired, each with the words its refusal must say.
fn bad_settings() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    vec![
        ("truncated", b"{\"hooks\": ".to_vec(), "is not valid JSON"),
        (
            "comments",
            b"{\n  // the team's hooks\n  \"hooks\": {}\n}\n".to_vec(),
            "comments and trailing commas are not JSON",
        ),
        (
            "trailing comma",
            b"{\"permissions\": {\"allow\": [\"Bash(git *)\",]}}\n".to_vec(),
            "is not valid JSON",
        ),
        (
            "an array",
            b"[{\"hooks\": {}}]\n".to_vec(),
            "holds an array",
        ),
        ("a string", b"\"hooks\"\n".to_vec(), "holds a string"),
        ("null", b"null".to_vec(), "holds null"),
        ("not UTF-8", b"{\"a\": \"\xff\xfe\"}".to_vec(), "not UTF-8"),
    ]
}

fn assert_refused(answer: &Answer, settings: &Path, bytes: &[u8], case: &str, says: &str) {
    assert_eq!(answer.code, 1, "{case}: exit 1; stderr: {}", answer.stderr);
    assert!(answer.stdout.is_empty(), "{case}: {}", answer.stdout);
    assert!(
        answer.stderr.contains(&settings.display().to_string())
            && answer.stderr.contains(says)
            && answer.stderr.contains("nothing was changed"),
        "{case}: a clear error naming the file: {}",
        answer.stderr
    );
    assert_eq!(
        fs::read(settings).unwrap(),
        bytes,
        "{case}: the file untouched"
    );
    assert!(!backup_of(settings).exists(), "{case}: no backup");
    assert!(!previous_of(settings).exists(), "{case}: nothing kept");
}

#[test]
fn install_and_uninstall_refuse_settings_that_are_not_one_json_object() {
    for (case, bytes, says) in bad_settings() {
        let (sb, settings) = with_settings(&bytes);
        let prefix = sb.root().join("bin");
        let install = preload(&sb, &["install", "--prefix", prefix.to_str().unwrap()]);
        assert_refused(&install, &settings, &bytes, case, says);
        assert!(
            !prefix.exists(),
            "{case}: refused before anything is copied"
        );
        let uninstall = preload(&sb, &["uninstall", "--prefix", prefix.to_str().unwrap()]);
        assert_refused(&uninstall, &settings, &bytes, case, says);
    }
}

#[test]
fn uninstall_refuses_a_settings_file_broken_after_install() {
    let (sb, settings) = with_settings("{\"permissions\": {}}\n");
    assert_eq!(
        preload(&sb, &["install", "--prefix", built().to_str().unwrap()]).code,
        0
    );
    let installed = fs::read_to_string(&settings).unwrap();
    let broken = installed.replacen('{', "{,", 1);
    fs::write(&settings, &broken).unwrap();
    let backup = fs::read(backup_of(&settings)).unwrap();
    let previous = fs::read(previous_of(&settings)).unwrap();
    let out = preload(&sb, &["uninstall"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_says(&out.stderr, &["is not valid JSON"]);
    assert_eq!(fs::read_to_string(&settings).unwrap(), broken);
    assert_eq!(
        fs::read(backup_of(&settings)).unwrap(),
        backup,
        "backup kept"
    );
    assert_eq!(fs::read(previous_of(&settings)).unwrap(), previous);
}

#[test]
fn every_write_of_the_settings_keeps_the_file_as_it_was() {
    let original = "{\n    \"permissions\": {\"allow\": [\"Bash(git *)\"]}\n}\n";
    let (sb, settings) = with_settings(original);

    let first = preload(&sb, &["install", "--prefix", built().to_str().unwrap()]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_says(&first.stdout, &[".preload-previous"]);
    assert_eq!(fs::read_to_string(backup_of(&settings)).unwrap(), original);
    assert_eq!(
        fs::read_to_string(previous_of(&settings)).unwrap(),
        original
    );

    // The user edits the file; a reinstall elsewhere rewrites it, keeping the edited version.
    let mut doc: Value = read_json(&settings);
    doc["model"] = json!("opus");
    let edited = format!("{}\n", serde_json::to_string_pretty(&doc).unwrap());
    fs::write(&settings, &edited).unwrap();
    let other = sb.root().join("other-bin");
    let second = preload(&sb, &["install", "--prefix", other.to_str().unwrap()]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(fs::read_to_string(previous_of(&settings)).unwrap(), edited);
    assert_eq!(
        fs::read_to_string(backup_of(&settings)).unwrap(),
        original,
        "the backup still holds the file from before preload"
    );

    // A second run changes nothing, so it keeps nothing new either.
    let before = fs::read_to_string(&settings).unwrap();
    let third = preload(&sb, &["install", "--prefix", other.to_str().unwrap()]);
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert_eq!(fs::read_to_string(&settings).unwrap(), before);
    assert_eq!(fs::read_to_string(previous_of(&settings)).unwrap(), edited);

    // Uninstall (the file was edited since install: only our wiring goes) keeps it too.
    let out = preload(&sb, &["uninstall"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(fs::read_to_string(previous_of(&settings)).unwrap(), before);
    assert_eq!(read_json(&settings)["model"], "opus");
}

#[test]
fn a_restoring_uninstall_keeps_the_installed_file() {
    let sb = Sandbox::bare();
    let settings = settings_of(&sb);
    assert_eq!(
        preload(&sb, &["install", "--prefix", built().to_str().unwrap()]).code,
        0
    );
    assert_eq!(
        fs::read_to_string(previous_of(&settings)).unwrap(),
        "",
        "empty: there was no file"
    );
    let installed = fs::read_to_string(&settings).unwrap();
    assert_eq!(preload(&sb, &["uninstall"]).code, 0);
    assert!(!settings.exists(), "there was no file before install");
    assert_eq!(
        fs::read_to_string(previous_of(&settings)).unwrap(),
        installed
    );
}

#[test]
fn settings_are_not_written_when_the_copy_cannot_be_kept() {
    let original = "{\"permissions\": {}}\n";
    let (sb, settings) = with_settings(original);
    // A directory where the copy goes: it cannot be written.
    fs::create_dir(previous_of(&settings)).unwrap();
    let out = preload(&sb, &["install", "--prefix", built().to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(".preload-previous"),
        "names the file it could not write: {}",
        out.stderr
    );
    assert_eq!(fs::read_to_string(&settings).unwrap(), original);
}

/// A git repository at `top` as git lays it out (`.git/info/exclude` with git's own comments).
fn git_repository(top: &Path) -> PathBuf {
    let info = top.join(".git/info");
    fs::create_dir_all(&info).unwrap();
    fs::write(top.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let exclude = info.join("exclude");
    fs::write(
        &exclude,
        "# git ls-files --others --exclude-from=.git/info/exclude\n# *~\n",
    )
    .unwrap();
    exclude
}

#[test]
fn install_keeps_seeds_out_of_git_and_uninstall_takes_only_its_own_rule_out() {
    let sb = Sandbox::bare();
    let exclude = git_repository(&sb.project);
    let before = fs::read_to_string(&exclude).unwrap();

    let out = install_in(&sb, &sb.project);
    assert!(out.contains("ignore: sessions/.seeds/ added"));
    let added = fs::read_to_string(&exclude).unwrap();
    assert_eq!(
        added,
        format!(
            "{before}{}\nsessions/.seeds/\n",
            preload_cli::install::ignore::MARK
        ),
        "appended, the rest kept"
    );
    assert!(
        !sb.project.join(".gitignore").exists(),
        "no tracked file touched"
    );

    // Idempotent.
    install_in(&sb, &sb.project);
    assert_eq!(fs::read_to_string(&exclude).unwrap(), added);

    // The user adds a rule of their own after ours; uninstall keeps it and removes ours.
    let user = format!("{added}*.log\n");
    fs::write(&exclude, &user).unwrap();
    uninstall_in(&sb, &sb.project);
    assert_eq!(
        fs::read_to_string(&exclude).unwrap(),
        format!("{before}*.log\n")
    );
}

#[test]
fn a_rule_the_user_already_has_is_neither_added_again_nor_removed() {
    let sb = Sandbox::bare();
    let exclude = git_repository(&sb.project);
    fs::write(&exclude, "/sessions/.seeds\n").unwrap();
    let out = install_in(&sb, &sb.project);
    assert!(out.contains("already in"));
    assert_eq!(fs::read_to_string(&exclude).unwrap(), "/sessions/.seeds\n");
    uninstall_in(&sb, &sb.project);
    assert_eq!(fs::read_to_string(&exclude).unwrap(), "/sessions/.seeds\n");
}

#[test]
fn outside_a_git_repository_no_rule_is_written() {
    let sb = Sandbox::bare();
    let out = install_in(&sb, &sb.project);
    assert!(!out.contains("ignore:"));
    let mut dir = Some(sb.project.as_path());
    while let Some(d) = dir.filter(|d| d.starts_with(sb.root())) {
        assert!(
            !d.join(".git").exists(),
            "no repository made at {}",
            d.display()
        );
        dir = d.parent();
    }
}

#[test]
fn a_project_below_the_top_or_in_a_worktree_gets_the_rule_where_git_reads_it() {
    // The project is a directory of a larger repository.
    let sb = Sandbox::bare();
    let top = sb.root().join("repo");
    let exclude = git_repository(&top);
    let project = top.join("apps/web app");
    fs::create_dir_all(project.join(".claude")).unwrap();
    install_in(&sb, &project);
    assert!(
        fs::read_to_string(&exclude)
            .unwrap()
            .ends_with("\napps/web app/sessions/.seeds/\n")
    );

    // A worktree: `.git` is a file naming its git directory, whose `commondir` leads to the
    // repository's, where `info/exclude` is read.
    let worktree = sb.root().join("wt");
    let git_dir = top.join(".git/worktrees/wt");
    fs::create_dir_all(&git_dir).unwrap();
    fs::write(git_dir.join("commondir"), "../..\n").unwrap();
    fs::create_dir_all(worktree.join(".claude")).unwrap();
    fs::write(
        worktree.join(".git"),
        format!("gitdir: {}\n", git_dir.display()),
    )
    .unwrap();
    install_in(&sb, &worktree);
    assert!(
        fs::read_to_string(&exclude)
            .unwrap()
            .ends_with("\nsessions/.seeds/\n")
    );
    assert!(
        !git_dir.join("info").exists(),
        "not the worktree's own directory"
    );
}
