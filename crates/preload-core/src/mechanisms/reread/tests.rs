use std::fs;
use std::os::unix::ffi::OsStrExt;

use super::*;

#[test]
fn marker_json_round_trips() {
    for reread in [
        Reread::Handler {
            dir: Some("/d/docs".into()),
        },
        Reread::Handler { dir: None },
        Reread::Worker {
            dispatch_file: "/x/task.md".into(),
        },
        Reread::Loop {
            loop_file: Some("/p/docs/loops/a.loop.md".into()),
            loops_dir: "/p/docs/loops".into(),
        },
        Reread::Loop {
            loop_file: None,
            loops_dir: "/p/docs/loops".into(),
        },
    ] {
        let bytes = reread.to_json().unwrap();
        assert_eq!(Reread::from_json(bytes.as_bytes()), Some(reread));
    }
    assert_eq!(Reread::from_json(b"{\"type\":\"other\"}"), None);
    assert_eq!(Reread::from_json(b"{\"type\":\"worker\"}"), None);
    assert_eq!(Reread::from_json(b"garbage"), None);
}

#[test]
fn registrations_read_json_or_legacy_text() {
    assert_eq!(
        registered_cwd(br#"{"cwd":"/p"}"#),
        Some(PathBuf::from("/p"))
    );
    assert_eq!(
        registered_cwd(b"/legacy/path\n"),
        Some(PathBuf::from("/legacy/path"))
    );
    assert_eq!(registered_cwd(b"relative"), None);
    assert_eq!(registered_cwd(b""), None);
}

#[test]
fn newest_non_archived_loop_document_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let loops = tmp.path().join("docs/loops");
    fs::create_dir_all(&loops).unwrap();
    let set = |name: &str, secs: u64| {
        let p = loops.join(name);
        fs::write(&p, name).unwrap();
        let t = std::time::UNIX_EPOCH + Duration::from_secs(secs);
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    };
    set("old.loop.md", 1_000);
    set("new.loop.md", 2_000);
    set("newest-archived.loop.md", 3_000);
    set("notes.md", 4_000);
    assert_eq!(active_loop_file(&loops), Some(loops.join("new.loop.md")));
    assert_eq!(active_loop_file(&tmp.path().join("none")), None);
}

#[test]
fn markers_are_written_byte_for_byte() {
    let cases = [
        (
            Reread::Handler {
                dir: Some("/d/docs".into()),
            },
            r#"{"type":"handler","handler_dir":"/d/docs"}"#,
        ),
        (
            Reread::Handler { dir: None },
            r#"{"type":"handler","handler_dir":null}"#,
        ),
        (
            Reread::Worker {
                dispatch_file: "/x/task \"1\".md".into(),
            },
            r#"{"type":"worker","dispatch_file":"/x/task \"1\".md"}"#,
        ),
        (
            Reread::Loop {
                loop_file: Some("/p/docs/loops/a.loop.md".into()),
                loops_dir: "/p/docs/loops".into(),
            },
            r#"{"type":"loop","loop_file":"/p/docs/loops/a.loop.md","loops_dir":"/p/docs/loops"}"#,
        ),
        (
            Reread::Loop {
                loop_file: None,
                loops_dir: "/p/docs/loops".into(),
            },
            r#"{"type":"loop","loop_file":null,"loops_dir":"/p/docs/loops"}"#,
        ),
    ];
    for (reread, bytes) in cases {
        assert_eq!(reread.to_json().unwrap(), bytes);
    }
}

#[test]
fn a_path_that_is_not_utf8_is_written_with_replacement_characters() {
    let dispatch_file = PathBuf::from(std::ffi::OsStr::from_bytes(b"/x/\xff.md"));
    let reread = Reread::Worker { dispatch_file };
    assert_eq!(
        reread.to_json().unwrap(),
        "{\"type\":\"worker\",\"dispatch_file\":\"/x/\u{fffd}.md\"}"
    );
}

#[test]
fn odd_markers_read_as_before() {
    let read = |text: &str| Reread::from_json(text.as_bytes());
    let handler = |dir: Option<&str>| {
        Some(Reread::Handler {
            dir: dir.map(PathBuf::from),
        })
    };
    assert_eq!(
        read(r#"{"type":"handler"}"#),
        handler(None),
        "member missing"
    );
    assert_eq!(
        read(r#"{"type":"handler","handler_dir":null}"#),
        handler(None)
    );
    assert_eq!(
        read(r#"{"type":"handler","handler_dir":"rel/d"}"#),
        handler(None)
    );
    assert_eq!(read(r#"{"type":"handler","handler_dir":7}"#), handler(None));
    assert_eq!(
        read(r#"{"type":"handler","handler_dir":{"a":1}}"#),
        handler(None)
    );
    assert_eq!(
        read(r#"{"handler_dir":"/d","extra":[1,{"x":null}],"type":"handler"}"#),
        handler(Some("/d")),
        "unknown members are ignored, the type may come last"
    );
    assert_eq!(read(r#"{"type":"worker","dispatch_file":null}"#), None);
    assert_eq!(read(r#"{"type":"worker","dispatch_file":"task.md"}"#), None);
    assert_eq!(
        read(r#"{"type":"worker","dispatch_file":"/t.md","handler_dir":"/d"}"#),
        Some(Reread::Worker {
            dispatch_file: "/t.md".into()
        })
    );
    let looped = |file: Option<&str>, dir: &str| {
        Some(Reread::Loop {
            loop_file: file.map(PathBuf::from),
            loops_dir: dir.into(),
        })
    };
    assert_eq!(
        read(r#"{"type":"loop","loop_file":"/p/l/a.loop.md"}"#),
        looped(Some("/p/l/a.loop.md"), "/p/l"),
        "the directory defaults to the document's"
    );
    assert_eq!(
        read(r#"{"type":"loop","loop_file":"/p/l/a.loop.md","loops_dir":"rel"}"#),
        looped(Some("/p/l/a.loop.md"), "/p/l")
    );
    assert_eq!(read(r#"{"type":"loop"}"#), looped(None, "docs/loops"));
    assert_eq!(
        read(r#"{"type":"loop","loop_file":null,"loops_dir":"/p/l"}"#),
        looped(None, "/p/l")
    );
    for other in [
        r#"{"type":"Handler"}"#,
        r#"{"type":5}"#,
        r#"{"type":null}"#,
        r#"{"handler_dir":"/d"}"#,
        r#""handler""#,
        "[]",
        "null",
        "",
        "{\"type\":\"handler\"",
    ] {
        assert_eq!(read(other), None, "{other}");
    }
    assert_eq!(Reread::from_json(b"\xff"), None);
    // Never written so: a marker with a member written twice is not one of ours.
    assert_eq!(
        read(r#"{"type":"handler","handler_dir":"/a","handler_dir":"/b"}"#),
        None
    );
}

#[test]
fn registrations_read_the_cwd_member_only() {
    assert_eq!(
        registered_cwd(br#"{"registered":"2026-01-01T00:00:00Z","cwd":"/p","x":1}"#),
        Some(PathBuf::from("/p"))
    );
    for other in [
        br#"{"cwd":"rel"}"#.as_slice(),
        br#"{"cwd":null}"#,
        br#"{"cwd":["/p"]}"#,
        br#"{"registered":"2026"}"#,
        br#"{"cwd":"/a","cwd":"/b"}"#,
        br#""/p""#,
        b"5",
        b"[]",
        b"\n/p",
    ] {
        assert_eq!(
            registered_cwd(other),
            None,
            "{}",
            String::from_utf8_lossy(other)
        );
    }
    assert_eq!(
        registered_cwd(b"  /legacy/path  \nmore"),
        Some(PathBuf::from("/legacy/path"))
    );
}

#[test]
fn a_registration_records_the_cwd_and_the_time() {
    use crate::primitives::env::{self, Env};
    let tmp = tempfile::tempdir().unwrap();
    let env = Env::from_pairs([
        (
            env::HOME,
            tmp.path().join("home").to_string_lossy().into_owned(),
        ),
        (
            env::PRELOAD_MARKER_DIR,
            tmp.path().join("m").to_string_lossy().into_owned(),
        ),
    ]);
    let input = crate::HookInput::from_value(serde_json::json!({"cwd": "/p/q \"r\""}));
    let mut ctx = Context::new(env, "test", &input, Duration::from_secs(5));
    ctx.now = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    register(&ctx, HANDLER_PREFIX, "s-1").unwrap();
    let dir = MarkerDir::open(&ctx.env).unwrap();
    let name = markers::marker_name(HANDLER_PREFIX, "s-1").unwrap();
    assert_eq!(
        String::from_utf8(dir.read(&name).unwrap().unwrap()).unwrap(),
        r#"{"cwd":"/p/q \"r\"","registered":"2023-11-14T22:13:20Z"}"#
    );
    // A cwd that is not UTF-8 is written as the markers' paths are.
    ctx.cwd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/p/\xff"));
    register(&ctx, HANDLER_PREFIX, "s-1").unwrap();
    let bytes = dir.read(&name).unwrap().unwrap();
    assert_eq!(registered_cwd(&bytes), Some(PathBuf::from("/p/\u{fffd}")));
}
