//! Unit tests of `markers`.

use super::*;
use std::os::unix::fs::symlink;
use std::sync::{Arc, Barrier};

fn dir_in(tmp: &Path) -> MarkerDir {
    MarkerDir::at(&tmp.join("m"), true).unwrap().unwrap()
}

#[test]
fn names_refuse_traversal_and_long_keys() {
    assert_eq!(marker_name("c", "abc-1.2_x"), Some("c-abc-1.2_x".into()));
    assert_eq!(marker_name("c", "../../etc/x"), None);
    assert_eq!(marker_name("c", ".."), None);
    assert_eq!(marker_name("c", ""), None);
    assert_eq!(marker_name("c", &"a".repeat(MAX_KEY_CHARS + 1)), None);
}

#[test]
fn directory_is_private_and_created_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = dir_in(tmp.path());
    let mode = fs::metadata(dir.path()).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700);
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let again = MarkerDir::at(dir.path(), false).unwrap().unwrap();
    assert_eq!(fs::metadata(again.path()).unwrap().mode() & 0o777, 0o700);
    assert!(
        MarkerDir::at(&tmp.path().join("absent"), false)
            .unwrap()
            .is_none()
    );
}

#[test]
fn directory_symlink_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("real")).unwrap();
    symlink(tmp.path().join("real"), tmp.path().join("link")).unwrap();
    let err = MarkerDir::at(&tmp.path().join("link"), true).unwrap_err();
    assert!(matches!(err, MarkerError::Symlink { .. }), "{err}");
}

#[test]
fn write_read_take_round_trip_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = dir_in(tmp.path());
    dir.write("a", b"one").unwrap();
    dir.write("a", b"two").unwrap();
    assert_eq!(dir.read("a").unwrap(), Some(b"two".to_vec()));
    assert_eq!(
        fs::metadata(dir.path().join("a")).unwrap().mode() & 0o777,
        0o600
    );
    assert_eq!(dir.take("a").unwrap(), Some(b"two".to_vec()));
    assert_eq!(dir.take("a").unwrap(), None);
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn create_is_exclusive() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = dir_in(tmp.path());
    assert!(dir.create("once", b"1").unwrap());
    assert!(!dir.create("once", b"2").unwrap());
    assert_eq!(dir.read("once").unwrap(), Some(b"1".to_vec()));
    assert!(matches!(
        dir.create("../x", b""),
        Err(MarkerError::UnsafeName { .. })
    ));
}

#[test]
fn planted_links_are_neither_followed_nor_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = dir_in(tmp.path());
    let victim = tmp.path().join("victim");
    fs::write(&victim, "precious").unwrap();
    symlink(&victim, dir.path().join("m1")).unwrap();
    assert_eq!(dir.read("m1").unwrap(), None);
    assert_eq!(dir.take("m1").unwrap(), None);
    assert!(!dir.path().join("m1").exists());
    symlink(&victim, dir.path().join("m2")).unwrap();
    assert!(
        !dir.create("m2", b"x").unwrap(),
        "exclusive create refuses the link"
    );
    dir.write("m2", b"mine").unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(
        !fs::symlink_metadata(dir.path().join("m2"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn hard_links_and_foreign_owners_are_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = dir_in(tmp.path());
    dir.write("h", b"x").unwrap();
    fs::hard_link(dir.path().join("h"), tmp.path().join("other")).unwrap();
    assert_eq!(dir.read("h").unwrap(), None);
    let plain = tmp.path().join("plain");
    fs::write(&plain, "x").unwrap();
    assert_eq!(
        read_trusted(&plain, current_uid().wrapping_add(1)).unwrap(),
        None
    );
    assert_eq!(
        read_trusted(&plain, current_uid()).unwrap(),
        Some(b"x".to_vec())
    );
}

#[test]
fn concurrent_takes_see_the_marker_exactly_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = dir_in(tmp.path());
    for _ in 0..20 {
        dir.write("c", b"m").unwrap();
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let dir = dir.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    dir.take("c").unwrap().is_some()
                })
            })
            .collect();
        let winners = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|won| *won)
            .count();
        assert_eq!(winners, 1);
    }
}

#[test]
fn sweep_removes_only_old_leftovers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = dir_in(tmp.path());
    fs::write(dir.path().join(".tmp-1"), "").unwrap();
    fs::write(dir.path().join(".taken-1-x"), "").unwrap();
    dir.write("keep", b"k").unwrap();
    dir.sweep(Duration::from_secs(3600));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
    dir.sweep(Duration::ZERO);
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("keep")]);
}
