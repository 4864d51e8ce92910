//! Unit tests of `file`.

use super::*;

#[test]
fn fifos_directories_and_devices_are_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let unavailable = |path: &Path| {
        Err(ReadError::Unavailable {
            path: path.to_path_buf(),
        })
    };
    assert_eq!(read_regular(&fifo, 100), unavailable(&fifo));
    assert_eq!(read_regular(tmp.path(), 100), unavailable(tmp.path()));
    let zero = Path::new("/dev/zero");
    assert_eq!(read_regular(zero, 100), unavailable(zero));
    let none = tmp.path().join("none");
    assert_eq!(read_regular(&none, 100), unavailable(&none));
    let big = tmp.path().join("big");
    fs::write(&big, vec![b'x'; 101]).unwrap();
    let err = read_regular(&big, 100).unwrap_err();
    assert_eq!(
        err,
        ReadError::TooLarge {
            path: big.clone(),
            size: 101,
            max: 100
        }
    );
    assert!(err.to_string().contains(&*big.to_string_lossy()), "{err}");
    assert_eq!(read_regular(&big, 101).unwrap().len(), 101);
}

#[test]
fn holds_tells_a_file_equal_to_bytes_across_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("state.json");
    // Longer than a chunk, with the one differing byte past the first.
    let text: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    fs::write(&path, &text).unwrap();
    assert!(holds(&path, &text));
    let mut other = text.clone();
    other[150_000] = b'!';
    assert!(!holds(&path, &other));
    assert!(!holds(&path, &text[..text.len() - 1]), "shorter");
    let mut longer = text.clone();
    longer.push(b'a');
    assert!(!holds(&path, &longer), "longer");
    fs::write(&path, b"").unwrap();
    assert!(holds(&path, b""));
    assert!(!holds(&tmp.path().join("none"), b""), "missing");
    assert!(!holds(tmp.path(), b""), "a directory");
}

#[test]
fn temp_names_carry_their_owner() {
    let p = temp_path(Path::new("/s/.state.json"));
    let name = p.file_name().unwrap().to_str().unwrap();
    assert_eq!(temp_owner(name), Some(std::process::id()));
    assert_eq!(temp_owner(".state.json.tmp.123"), Some(123));
    assert_eq!(temp_owner(".state.json.lock.tmp.77.3"), Some(77));
    assert_eq!(temp_owner(".state.json"), None);
    assert_eq!(temp_owner("notes.tmp.md"), None);
    assert_eq!(temp_owner("a.tmp.12x.3"), None);
    assert_ne!(temp_path(Path::new("/a")), temp_path(Path::new("/a")));
}

#[test]
fn only_orphans_are_swept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let dead_file = dir.join(".state.json.tmp.4000000.0");
    let dead_bash = dir.join(".state.json.tmp.4000001");
    let dead_stage = dir.join(".state.json.lock.tmp.4000002.5");
    let live = dir.join(format!(".state.json.tmp.{}.9", std::process::id()));
    let foreign_dir = dir.join("x.tmp.4000003.1");
    for f in [&dead_file, &dead_bash, &live] {
        fs::write(f, "{").unwrap();
    }
    fs::create_dir(&dead_stage).unwrap();
    fs::write(dead_stage.join("pid"), "4000002\n").unwrap();
    fs::write(dead_stage.join("owner"), "4000002\n").unwrap();
    fs::create_dir(&foreign_dir).unwrap();
    fs::write(foreign_dir.join("keep"), "x").unwrap();
    fs::write(dir.join(".state.json"), "{}").unwrap();
    assert_eq!(remove_orphans(dir), 3);
    assert!(!dead_file.exists() && !dead_bash.exists() && !dead_stage.exists());
    assert!(live.exists(), "a live writer's temporary stays");
    assert!(
        foreign_dir.join("keep").exists(),
        "a directory with content stays"
    );
    assert!(dir.join(".state.json").exists());
}

#[test]
fn atomic_writes_follow_their_options_and_leave_nothing_behind() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let names = || -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let durable = dir.join("durable.json");
    write_atomic(&durable, b"one").unwrap();
    write_cache(&durable, b"two").unwrap();
    assert_eq!(fs::read(&durable).unwrap(), b"two");

    let private = WriteOptions {
        mode: 0o600,
        hidden_temp: Some(".tmp-"),
        held_temp: false,
        ..WriteOptions::CACHE
    };
    let secret = dir.join("secret");
    assert!(write_atomic_with(&secret, b"s", private, || true).unwrap());
    assert_eq!(
        fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Without replace: written once, refused over a file or a dangling link.
    let once = WriteOptions {
        replace: false,
        ..private
    };
    let first = dir.join("first");
    assert!(write_atomic_with(&first, b"1", once, || true).unwrap());
    assert!(!write_atomic_with(&first, b"2", once, || true).unwrap());
    assert_eq!(fs::read(&first).unwrap(), b"1");
    std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling")).unwrap();
    assert!(!write_atomic_with(&dir.join("dangling"), b"x", once, || true).unwrap());
    assert!(
        !dir.join("nowhere").exists(),
        "a link is never written through"
    );

    // A publication that is called off changes nothing.
    assert!(!write_atomic_with(&durable, b"three", WriteOptions::DURABLE, || false).unwrap());
    assert_eq!(fs::read(&durable).unwrap(), b"two");
    assert_eq!(
        names(),
        ["dangling", "durable.json", "first", "secret"],
        "no temporary is left"
    );
}

#[test]
fn a_temporary_left_under_the_same_name_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".state.json");
    // The next two names this process would use are taken (a killed process with our PID).
    for k in 0..2 {
        let n = next_temp_number() + k;
        fs::write(
            tmp.path()
                .join(format!(".state.json.tmp.{}.{n}", std::process::id())),
            "left",
        )
        .unwrap();
    }
    write_atomic(&path, b"{}").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"{}");
}

/// A cache write through the one temporary the file keeps beside it.
const HELD: WriteOptions = WriteOptions {
    held_temp: true,
    ..WriteOptions::CACHE
};

#[test]
fn a_held_temporary_left_by_a_killed_writer_is_the_next_writers() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("counters.json");
    let leftover = tmp.path().join(format!("counters.json{HELD_TEMP_SUFFIX}"));
    // What a writer killed before its rename leaves, or a link planted there.
    fs::write(&leftover, "{\"half").unwrap();
    assert!(write_atomic_with(&path, b"one", HELD, || true).unwrap());
    assert_eq!(fs::read(&path).unwrap(), b"one");
    assert!(!leftover.exists());
    let victim = tmp.path().join("victim");
    fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, &leftover).unwrap();
    assert!(write_atomic_with(&path, b"two", HELD, || true).unwrap());
    assert_eq!(fs::read(&path).unwrap(), b"two");
    assert_eq!(fs::read(&victim).unwrap(), b"keep", "never written through");
    if crate::primitives::system::rename::HAS_RENAMEAT2 {
        // Exchanged: the previous version is the next write's temporary.
        assert_eq!(fs::read(&leftover).unwrap(), b"one");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 3);
    } else {
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 2);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_held_write_swaps_the_file_with_its_previous_version() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("counters.json");
    let inode = |p: &Path| fs::metadata(p).unwrap().ino();
    assert!(write_atomic_with(&path, b"first, long", HELD, || true).unwrap());
    let first = inode(&path);
    assert!(write_atomic_with(&path, b"second", HELD, || true).unwrap());
    let second = inode(&path);
    assert_ne!(first, second);
    // The third goes over the first's file in place, cut to its length.
    assert!(write_atomic_with(&path, b"third", HELD, || true).unwrap());
    assert_eq!(fs::read(&path).unwrap(), b"third");
    assert_eq!(inode(&path), first, "no file created");
    let previous = tmp.path().join(format!("counters.json{HELD_TEMP_SUFFIX}"));
    assert_eq!(fs::read(&previous).unwrap(), b"second");
    // A write refused before it is published leaves the file as it was.
    assert!(!write_atomic_with(&path, b"fourth", HELD, || false).unwrap());
    assert_eq!(fs::read(&path).unwrap(), b"third");
    assert!(write_atomic_with(&path, b"fifth", HELD, || true).unwrap());
    assert_eq!(fs::read(&path).unwrap(), b"fifth");
}
