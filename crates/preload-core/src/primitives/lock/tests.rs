//! Unit tests of `lock`.

use std::time::SystemTime;

use super::*;

fn soon(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms)
}

/// A process that is gone.
const DEAD: u32 = 4_000_000;

/// Take the lock directory `dir` the way the engine's bash takes it: mkdir, then the holder's
/// PID (none: a holder stopped between the two).
fn take_as_bash(dir: &Path, holder: Option<u32>) {
    fs::create_dir(dir).unwrap();
    if let Some(pid) = holder {
        fs::write(dir.join("pid"), format!("{pid}\n")).unwrap();
    }
}

/// A state file `s.json` in a new directory whose lock bash has taken for `holder`: the
/// directory, the file, the lock directory.
fn taken_by_bash(holder: Option<u32>) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.json");
    let dir = lock_dir_for(&file);
    take_as_bash(&dir, holder);
    (tmp, file, dir)
}

#[test]
fn acquire_writes_pid_and_release_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(".state.json");
    let lock = StateLock::acquire(&file, soon(100)).unwrap();
    let dir = lock_dir_for(&file);
    assert_eq!(read_holder(&dir), Some(std::process::id()));
    lock.release();
    assert!(!dir.exists());
}

#[test]
fn a_live_bash_holder_excludes_us_until_timeout() {
    // Its holder alive: this process's parent.
    let (_tmp, file, dir) = taken_by_bash(Some(std::os::unix::process::parent_id()));
    let err = StateLock::acquire(&file, soon(60)).unwrap_err();
    assert!(matches!(err, LockError::Timeout { .. }), "{err}");
    assert!(
        dir.join("pid").exists(),
        "a live holder's lock is never removed"
    );
}

#[test]
fn a_dead_holder_is_reclaimed_at_once() {
    let (_tmp, file, _) = taken_by_bash(Some(DEAD));
    let started = Instant::now();
    let lock = StateLock::acquire(&file, soon(2000)).unwrap();
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(read_holder(lock.path()), Some(std::process::id()));
}

#[test]
fn a_pidless_lock_is_reclaimed_only_when_old() {
    let (_tmp, file, dir) = taken_by_bash(None);
    assert_eq!(inspect(&dir), LockHealth::Fresh);
    assert!(StateLock::acquire(&file, soon(40)).is_err());
    let old = SystemTime::now() - Duration::from_secs(30);
    fs::File::open(&dir).unwrap().set_modified(old).unwrap();
    assert_eq!(inspect(&dir), LockHealth::Stale);
    assert!(StateLock::acquire(&file, soon(100)).is_ok());
}

#[test]
fn a_pidless_lock_dated_ahead_ages_like_one_dated_behind() {
    // The clock was set back after the lock was made: its time is in the future.
    let (_tmp, file, dir) = taken_by_bash(None);
    let ahead = SystemTime::now() + Duration::from_secs(2);
    fs::File::open(&dir).unwrap().set_modified(ahead).unwrap();
    assert_eq!(
        inspect(&dir),
        LockHealth::Fresh,
        "a second or two ahead: fresh"
    );
    assert!(StateLock::acquire(&file, soon(40)).is_err());
    let far = SystemTime::now() + Duration::from_secs(3_600);
    fs::File::open(&dir).unwrap().set_modified(far).unwrap();
    assert_eq!(inspect(&dir), LockHealth::Stale, "an hour ahead: abandoned");
    assert!(StateLock::acquire(&file, soon(100)).is_ok());
}

#[test]
fn threads_are_serialised() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("count");
    fs::write(&file, "0").unwrap();
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let file = file.clone();
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let _lock = StateLock::acquire(&file, soon(5000)).unwrap();
                    let n: u32 = fs::read_to_string(&file).unwrap().parse().unwrap();
                    fs::write(&file, (n + 1).to_string()).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(fs::read_to_string(&file).unwrap(), "160");
}

#[test]
fn a_dead_holders_lock_and_temporaries_are_gone_after_the_next_write() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(".state.json");
    fs::write(&file, "{}").unwrap();
    let dir = lock_dir_for(&file);
    take_as_bash(&dir, Some(DEAD));
    let litter = tmp.path().join(".state.json.tmp.4000000.3");
    fs::write(&litter, "{\"partial\": ").unwrap();
    let lock = StateLock::acquire(&file, soon(500)).unwrap();
    lock.release();
    assert!(!litter.exists(), "the dead writer's temporary is swept");
    let mut left: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    let expected: &[&str] = if crate::primitives::system::rename::HAS_RENAMEAT2 {
        &[SPARE, ".state.json"]
    } else {
        &[".state.json"]
    };
    assert_eq!(left, expected);
}

#[test]
fn a_release_sweeps_only_when_its_acquisition_met_leftovers() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(".state.json");
    fs::write(&file, "{}").unwrap();
    // A temporary of a dead writer with no lock to show for it: a clean acquisition does not
    // look for it.
    let stray = tmp.path().join(".state.json.tmp.4000000.3");
    fs::write(&stray, "{").unwrap();
    StateLock::acquire(&file, soon(500)).unwrap().release();
    assert!(stray.exists(), "no leftover met, no sweep");
    // A lock killed while staged is a directory: the link count shows it, and both go.
    let staged = tmp.path().join(".state.json.lock.tmp.4000000.1");
    fs::create_dir(&staged).unwrap();
    fs::write(staged.join("pid"), "4000000\n").unwrap();
    StateLock::acquire(&file, soon(500)).unwrap().release();
    assert!(!staged.exists() && !stray.exists(), "a staged lock is met");
    // A dead holder's lock, taken over: its temporary goes with the release.
    fs::write(&stray, "{").unwrap();
    take_as_bash(&lock_dir_for(&file), Some(DEAD));
    StateLock::acquire(&file, soon(500)).unwrap().release();
    assert!(!stray.exists(), "the dead holder's temporary is swept");
}

#[test]
fn release_leaves_a_lock_that_is_no_longer_ours() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.json");
    let lock = StateLock::acquire(&file, soon(100)).unwrap();
    // Reclaimed from us meanwhile (held past STALE_AFTER) and re-taken by another process.
    fs::write(
        lock.path().join("pid"),
        format!("{}\n", std::os::unix::process::parent_id()),
    )
    .unwrap();
    let dir = lock.path().to_path_buf();
    lock.release();
    assert!(dir.join("pid").exists());
}

#[test]
fn a_lock_appears_with_its_holder_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.json");
    let dir = lock_dir_for(&file);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (dir, stop) = (dir.clone(), stop.clone());
        std::thread::spawn(move || {
            use std::os::unix::fs::MetadataExt;
            let mut pidless = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // One lock directory, looked at through its own descriptor: its `pid` is
                // looked for in that directory, wherever a release moves it meanwhile, and it
                // counts only while it is still the one at the lock's path (looking by path
                // twice would take a lock released and the next one taken for one without a
                // pid).
                let Ok(instance) = fs::File::open(&dir) else {
                    continue;
                };
                let has_pid = nix::sys::stat::fstatat(
                    &instance,
                    "pid",
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                )
                .is_ok();
                let same = match (instance.metadata(), fs::metadata(&dir)) {
                    (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                    _ => false,
                };
                if !has_pid && same {
                    pidless += 1;
                }
            }
            pidless
        })
    };
    for _ in 0..200 {
        StateLock::acquire(&file, soon(500)).unwrap().release();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let pidless = watcher.join().unwrap();
    if crate::primitives::system::rename::HAS_RENAMEAT2 {
        assert_eq!(pidless, 0, "a lock was seen without its pid file");
    }
}

#[test]
fn two_locks_in_one_directory_do_not_wait_on_each_other() {
    let tmp = tempfile::tempdir().unwrap();
    let a = StateLock::acquire(&tmp.path().join("a.json"), soon(200)).unwrap();
    let started = Instant::now();
    let b = StateLock::acquire(&tmp.path().join("b.json"), soon(200)).unwrap();
    assert!(started.elapsed() < Duration::from_millis(150));
    a.release();
    b.release();
    assert!(
        latch::LATCHES
            .lock()
            .unwrap()
            .iter()
            .all(|(d, ..)| d != tmp.path())
    );
}

#[test]
fn a_lock_holds_only_the_engines_pid_file() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.json");
    let lock = StateLock::acquire(&file, soon(100)).unwrap();
    let names: Vec<_> = fs::read_dir(lock.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["pid"]);
}

#[test]
fn a_racy_reclaim_of_a_live_lock_is_noticed_before_the_write() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.json");
    let lock = StateLock::acquire(&file, soon(100)).unwrap();
    assert!(lock.still_held());
    let dir = lock.path().to_path_buf();
    // What lib.sh does after it saw an earlier holder die: rm -f pid; rmdir; then its own
    // mkdir and PID.
    fs::remove_file(dir.join("pid")).unwrap();
    fs::remove_dir(&dir).unwrap();
    assert!(!lock.still_held());
    take_as_bash(&dir, Some(std::os::unix::process::parent_id()));
    assert!(!lock.still_held());
    lock.release();
    assert!(dir.join("pid").exists(), "the new holder's lock stays");
}

// Where locks are renamed into place (`renameat2`), a released one is kept as the spare.
#[cfg(target_os = "linux")]
#[test]
fn a_released_lock_is_the_next_ones_spare() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.json");
    StateLock::acquire(&file, soon(100)).unwrap().release();
    let spare = tmp.path().join(SPARE);
    assert!(!lock_dir_for(&file).exists(), "released");
    assert_eq!(read_holder(&spare), Some(std::process::id()));
    // Its last holder had a longer PID: the new one is written over it, and cut to its length.
    fs::write(spare.join("pid"), "123456789012\n").unwrap();
    let inode = fs::metadata(spare.join("pid")).unwrap().ino();
    let lock = StateLock::acquire(&file, soon(100)).unwrap();
    assert!(!spare.exists(), "the spare became the lock");
    let pid = lock.path().join("pid");
    assert_eq!(
        fs::read_to_string(&pid).unwrap(),
        format!("{}\n", std::process::id())
    );
    assert_eq!(fs::metadata(&pid).unwrap().ino(), inode, "the same file");
    assert!(lock.still_held());
    lock.release();
    assert!(spare.is_dir() && !lock_dir_for(&file).exists());
}

#[cfg(target_os = "linux")]
#[test]
fn one_spare_per_directory_and_a_second_release_deletes_its_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let a = StateLock::acquire(&tmp.path().join("a.json"), soon(100)).unwrap();
    let b = StateLock::acquire(&tmp.path().join("b.json"), soon(100)).unwrap();
    a.release();
    b.release();
    let names: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [SPARE], "one spare, no lock, no temporary");
    assert_eq!(
        fs::read_dir(tmp.path().join(SPARE))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect::<Vec<_>>(),
        ["pid"],
        "a spare holds what a lock holds"
    );
}

#[test]
fn a_spare_name_taken_by_something_else_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.json");
    let foreign = tmp.path().join(SPARE);
    fs::write(&foreign, "not a lock").unwrap();
    for _ in 0..2 {
        let lock = StateLock::acquire(&file, soon(100)).unwrap();
        assert_eq!(read_holder(lock.path()), Some(std::process::id()));
        lock.release();
        assert!(!lock_dir_for(&file).exists());
    }
    assert_eq!(fs::read_to_string(&foreign).unwrap(), "not a lock");
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "nothing else left"
    );
}

#[test]
fn a_lock_file_names_its_holder_with_or_without_a_line_end() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("pid");
    for (text, pid) in [
        ("4242\n", Some(4242)),
        ("4242", Some(4242)),
        (" 4242 \n\n", Some(4242)),
        ("", None),
        ("pid\n", None),
        (&"9".repeat(40), None),
    ] {
        fs::write(&path, text).unwrap();
        assert_eq!(read_pid(&path), pid, "{text:?}");
    }
    assert_eq!(read_pid(&tmp.path().join("missing")), None);
}
