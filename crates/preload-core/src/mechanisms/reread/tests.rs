use std::fs;

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
        let bytes = reread.to_json().to_string();
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
