//! The compaction re-read against hostile input: session ids that would name a path, planted
//! links, other users' and legacy markers, bad stdin, and its usage.

use super::*;

#[test]
fn traversal_session_id_never_reaches_a_path() {
    let sb = sandbox();
    let sid = "../../etc/x";
    handler_docs(&sb);
    register(&sb, sid, "handler");
    register(&sb, sid, "loop");
    assert_eq!(
        call(&sb, "precompact", json!({"session_id": sid})).stdout,
        ""
    );
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": sid})));
    assert_eq!(call(&sb, "stop", json!({"session_id": sid})).stdout, "");
    assert_eq!(
        call(
            &sb,
            "sessionstart",
            json!({"session_id": sid, "source": "compact"})
        )
        .stdout,
        ""
    );
    let created = fs::read_dir(marker_dir(&sb)).map_or(0, Iterator::count);
    assert_eq!(created, 0, "no marker for an unsafe session id");
    for escaped in [
        sb.root().join("etc/x"),
        sb.root().parent().unwrap().join("etc/x"),
        PathBuf::from("/etc/x"),
    ] {
        assert!(!escaped.exists(), "{} was created", escaped.display());
    }
}

#[test]
fn planted_symlink_marker_is_neither_followed_nor_trusted() {
    let sb = sandbox();
    register(&sb, "other", "loop");
    let victim = sb.root().join("victim.json");
    let planted = r#"{"type":"worker","dispatch_file":"/etc/passwd"}"#;
    fs::write(&victim, planted).unwrap();

    // A link at the marker path is not a marker: no deny, no read of its target.
    symlink(&victim, marker(&sb, "sym")).unwrap();
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "sym"})));
    symlink(&victim, marker(&sb, "sym2")).unwrap();
    assert_eq!(call(&sb, "stop", json!({"session_id": "sym2"})).stdout, "");
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        planted,
        "target untouched"
    );

    // Writing a marker replaces a planted link instead of writing through it.
    symlink(&victim, marker(&sb, "sym3")).unwrap();
    compacted(&sb, "sym3", "handler");
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        planted,
        "target untouched"
    );
    let meta = fs::symlink_metadata(marker(&sb, "sym3")).unwrap();
    assert!(
        meta.file_type().is_file(),
        "a real marker replaced the link"
    );
    assert_eq!(read_marker(&sb, "sym3")["type"], "handler");

    // A linked marker directory is refused altogether.
    let mut linked = sandbox();
    let real = linked.root().join("real-dir");
    fs::create_dir_all(&real).unwrap();
    let link = linked.root().join("linked-dir");
    symlink(&real, &link).unwrap();
    linked.extra_env.push((
        env::PRELOAD_MARKER_DIR.into(),
        link.to_string_lossy().into(),
    ));
    compacted(&linked, "d", "handler");
    assert_eq!(
        fs::read_dir(&real).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

#[test]
fn legacy_markers_count_only_as_own_regular_files() {
    let sb = sandbox();
    let legacy = legacy_dir(&sb);
    handler_docs(&sb);

    fs::write(legacy.join("claude-handler-L1"), "").unwrap();
    call(&sb, "precompact", json!({"session_id": "L1"}));
    assert_eq!(read_marker(&sb, "L1")["type"], "handler");

    loop_docs(&sb);
    fs::write(
        legacy.join("claude-loop-L2"),
        json!({"cwd": sb.project}).to_string(),
    )
    .unwrap();
    call(
        &sb,
        "precompact",
        json!({"session_id": "L2", "cwd": sb.root()}),
    );
    assert_eq!(read_marker(&sb, "L2")["type"], "loop");
    assert!(
        read_marker(&sb, "L2")["loop_file"]
            .as_str()
            .unwrap()
            .ends_with("active.loop.md")
    );

    let own = sb.root().join("own-file");
    fs::write(&own, "").unwrap();
    symlink(&own, legacy.join("claude-handler-L3")).unwrap();
    symlink(&own, legacy.join("claude-loop-L3")).unwrap();
    call(&sb, "precompact", json!({"session_id": "L3"}));
    assert!(!marker(&sb, "L3").exists(), "legacy links are not followed");

    fs::write(legacy.join("claude-handler-active"), "").unwrap();
    call(&sb, "precompact", json!({"session_id": "L4"}));
    assert_eq!(
        read_marker(&sb, "L4")["type"],
        "handler",
        "global legacy handler marker"
    );
}

fn nobody() -> (nix::unistd::Uid, nix::unistd::Gid) {
    (
        nix::unistd::Uid::from_raw(65534),
        nix::unistd::Gid::from_raw(65534),
    )
}

#[test]
fn markers_of_another_user_are_ignored() {
    if !nix::unistd::geteuid().is_root() {
        // Changing a file's owner needs root; the unit tests of `markers` cover the check.
        return;
    }
    let (uid, gid) = nobody();

    // A legacy marker owned by someone else does not make this a handler session.
    let sb = sandbox();
    let foreign = legacy_dir(&sb).join("claude-handler-F1");
    fs::write(&foreign, "").unwrap();
    nix::unistd::chown(&foreign, Some(uid), Some(gid)).unwrap();
    call(&sb, "precompact", json!({"session_id": "F1"}));
    assert!(!marker(&sb, "F1").exists());

    // A marker directory owned by someone else is not used: no deny, nothing written.
    compacted(&sb, "F2", "handler");
    assert!(marker(&sb, "F2").exists());
    let dir = marker_dir(&sb);
    for entry in fs::read_dir(&dir).unwrap() {
        nix::unistd::chown(&entry.unwrap().path(), Some(uid), Some(gid)).unwrap();
    }
    nix::unistd::chown(&dir, Some(uid), Some(gid)).unwrap();
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "F2"})));
    assert_eq!(call(&sb, "stop", json!({"session_id": "F2"})).stdout, "");
    assert!(
        marker(&sb, "F2").exists(),
        "another user's marker is left alone"
    );
    register(&sb, "F3", "handler");
    assert!(
        !dir.join("handler-F3").exists(),
        "nothing written into another user's directory"
    );

    // A marker file of another user inside our own directory is not trusted either.
    let sb = sandbox();
    compacted(&sb, "F4", "handler");
    nix::unistd::chown(&marker(&sb, "F4"), Some(uid), Some(gid)).unwrap();
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "F4"})));
}

#[test]
fn bad_input_fails_open() {
    let sb = sandbox();
    for sub in [
        "register",
        "precompact",
        "pretooluse",
        "stop",
        "sessionstart",
    ] {
        for stdin in ["not json", "", "[1,2]", "{\"session_id\": 5}"] {
            let answer = sb.run_raw(BIN, &[sub], stdin);
            answer.assert_contract();
            if sub == "pretooluse" {
                assert_allowed_silently(&answer);
            } else {
                assert_eq!(answer.stdout, "", "{sub} with {stdin:?}");
            }
        }
    }
    // A corrupt marker is consumed and ignored.
    register(&sb, "c", "handler");
    fs::write(marker(&sb, "c"), "{not json").unwrap();
    assert_allowed_silently(&call(&sb, "pretooluse", json!({"session_id": "c"})));
    assert!(!marker(&sb, "c").exists());
}

#[test]
fn help_version_and_usage() {
    let sb = sandbox();
    let help = sb.command(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success());
    for word in [
        "precompact",
        "pretooluse",
        "sessionstart",
        "PRELOAD_MARKER_DIR",
        "PRELOAD_LEGACY_MARKER_DIR",
    ] {
        assert!(text.contains(word), "help names {word}");
    }
    let version = sb.command(BIN).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("preload-compaction-reread "));
    let usage = std::process::Command::new(bin(BIN))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        usage.status.code(),
        Some(1),
        "a missing subcommand is a usage error that never blocks"
    );
}
