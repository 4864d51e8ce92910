use serde_json::json;

use super::codec::{decode, decode_with, encode};
use super::*;

/// The client process the tests' events belong to: this process's parent (alive).
fn owner() -> u32 {
    std::os::unix::process::parent_id()
}

#[test]
fn chunk_arguments() {
    let args = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(parse_chunk(&args(&[])).unwrap(), None);
    assert_eq!(
        parse_chunk(&args(&["--chunk", "3/48"])).unwrap(),
        Some(Chunk {
            index: 3,
            total: 48
        })
    );
    assert_eq!(
        parse_chunk(&args(&["--chunk=0/1"])).unwrap(),
        Some(Chunk { index: 0, total: 1 })
    );
    assert!(parse_chunk(&args(&["--chunk", "48/48"])).is_err());
    assert!(parse_chunk(&args(&["--chunk", "x"])).is_err());
    assert!(parse_chunk(&args(&["--chunk"])).is_err());
}

#[test]
fn cache_keys_are_safe_file_names() {
    let input = HookInput::from_value(json!({"session_id": "a/../b c", "source": "clear"}));
    let key = cache_key(&input, owner());
    assert!(key.starts_with("a_.._b_c_clear_"), "{key}");
    assert!(
        key.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    );
    // The client process is part of the key: a run in another process never shares it.
    let started = process::start_time(owner()).unwrap_or(0);
    assert!(key.ends_with(&format!("_{}-{started}", owner())), "{key}");
    assert_ne!(key, cache_key(&input, std::process::id()));
}

#[test]
fn reslicing_keeps_every_block_or_points_at_the_rest() {
    let slots = vec![
        vec!["a".repeat(300)],
        vec!["b".repeat(300)],
        vec!["c".repeat(300)],
    ];
    let same = reslice(3, slots.clone(), 3, 400);
    assert_eq!(same, slots);
    let fewer = reslice(3, slots, 2, 400);
    assert_eq!(fewer.len(), 2);
    assert!(fewer[1].last().unwrap().starts_with("[preload overflow:"));
    for slot in &fewer {
        assert!(delivery::chars(&delivery::join_blocks(slot)) <= 400);
    }
}

/// The directory `cache` in `tmp`, and the environment that names it as the cache.
fn cache_in(tmp: &tempfile::TempDir) -> (PathBuf, Env) {
    let dir = tmp.path().join("cache");
    let env = Env::from_pairs([(env::PRELOAD_CACHE_DIR, dir.to_string_lossy().into_owned())]);
    (dir, env)
}

/// The cache of the event `input` names.
fn open(env: &Env, input: serde_json::Value) -> StartText {
    StartText::open(env, &HookInput::from_value(input), owner()).unwrap()
}

/// The first registration on an empty cache: it finds nothing and writes `slots`.
fn write_first(cache: &StartText, chunk: Chunk, slots: &Slots) {
    match cache.lookup(chunk, 100).unwrap() {
        Lookup::Missing(writer) => writer.write(slots).unwrap(),
        Lookup::Found(found) => panic!("nothing was cached yet: {found:?}"),
    }
}

#[test]
fn one_registration_writes_and_the_others_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, env) = cache_in(&tmp);
    let cache = open(&env, json!({"session_id": "s1", "source": "startup"}));
    assert!(cache.path().starts_with(&dir));
    let slots = vec![
        vec!["a\n".to_owned()],
        vec!["b".to_owned(), "é 😀".to_owned()],
    ];
    let chunk = |index, total| Chunk { index, total };
    write_first(&cache, chunk(0, 2), &slots);
    for (index, slot) in slots.iter().enumerate() {
        match cache.lookup(chunk(index, 2), 100).unwrap() {
            Lookup::Found(found) => assert_eq!(&found, slot),
            Lookup::Missing(_) => panic!("the cache was written"),
        }
    }
    // Registrations of another number cut the same blocks again.
    match cache.lookup(chunk(0, 1), 100).unwrap() {
        Lookup::Found(found) => assert_eq!(found, ["a\n", "b", "é 😀"]),
        Lookup::Missing(_) => panic!("the cache was written"),
    }
}

/// A slot asked of `encode(slots)` for `total` registrations.
fn slot_of(bytes: &[u8], index: usize, total: usize) -> Option<Vec<String>> {
    decode(bytes, Chunk { index, total }, 10_000)
}

#[test]
fn a_cache_file_that_is_not_whole_is_not_used() {
    let slots = vec![vec!["one\n".to_owned(), "two".to_owned()], vec![]];
    let bytes = encode(&slots);
    assert_eq!(slot_of(&bytes, 0, 2), Some(slots[0].clone()));
    assert_eq!(slot_of(&bytes, 1, 2), Some(Vec::new()));
    // Cut anywhere, grown, of another format, or with a block that is not UTF-8: not used.
    for end in 0..bytes.len() {
        assert_eq!(slot_of(&bytes[..end], 0, 2), None, "cut at {end}");
    }
    let mut longer = bytes.clone();
    longer.push(b'x');
    assert_eq!(slot_of(&longer, 0, 2), None);
    let other = String::from_utf8(bytes.clone())
        .unwrap()
        .replace("cache 2", "cache 1");
    assert_eq!(slot_of(other.as_bytes(), 0, 2), None);
    let mut invalid = bytes;
    let at = invalid.windows(3).position(|w| w == b"two").unwrap();
    invalid[at] = 0xff;
    assert_eq!(slot_of(&invalid, 0, 2), None);
}

#[test]
fn a_registration_reads_the_index_and_its_own_slot_only() {
    let block = |i: usize| format!("{i:04} {}\n", "x".repeat(3_000));
    let slots: Slots = (0..8)
        .map(|s| vec![block(2 * s), block(2 * s + 1)])
        .collect();
    let bytes = encode(&slots);
    let chunk = |index| Chunk { index, total: 8 };
    let read = std::cell::RefCell::new(Vec::new());
    let range = |r: std::ops::Range<usize>| {
        read.borrow_mut().push(r.clone());
        bytes.get(r).map(<[u8]>::to_vec)
    };
    let index_len = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(2)
        .unwrap()
        .0
        + 1;
    // Whatever the first read holds after the index: part of the slot, all of it, the file.
    for head in [index_len, index_len + 50, 4_000, 9_000, 30_000, bytes.len()] {
        for (index, slot) in slots.iter().enumerate() {
            read.borrow_mut().clear();
            let found = decode_with(&bytes[..head], bytes.len(), range, chunk(index), 10_000);
            assert_eq!(
                found.as_ref(),
                Some(slot),
                "slot {index}, first read {head}"
            );
            let more: usize = read.borrow().iter().map(std::ops::Range::len).sum();
            assert!(
                more < 6_100,
                "slot {index}, first read {head}: {more} more bytes read"
            );
        }
    }
    // A first read that cuts the index short reads the file, and finds the slot all the same.
    let found = decode_with(&bytes[..40], bytes.len(), range, chunk(3), 10_000);
    assert_eq!(found.as_ref(), Some(&slots[3]));
    // Another number of registrations needs every slot, to cut them again.
    let one = Chunk { index: 0, total: 1 };
    let found = decode_with(&bytes[..index_len], bytes.len(), range, one, 100_000).unwrap();
    assert_eq!(found, slots.concat());
}

proptest::proptest! {
    /// Every slot comes back as it was written, whatever the blocks hold.
    #[test]
    fn cache_files_keep_every_block(
        slots in proptest::collection::vec(
            proptest::collection::vec("(a|é|😀|\n|[0-9]){0,40}", 0..4),
            1..5,
        )
    ) {
        let bytes = encode(&slots);
        for (index, slot) in slots.iter().enumerate() {
            let found = slot_of(&bytes, index, slots.len());
            proptest::prop_assert_eq!(found.as_ref(), Some(slot));
        }
    }
}

#[test]
fn a_linked_cache_directory_is_refused_with_its_path() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let env = Env::from_pairs([(env::PRELOAD_CACHE_DIR, link.to_string_lossy().into_owned())]);
    let input = HookInput::from_value(json!({"session_id": "s1"}));
    let err = StartText::open(&env, &input, owner()).unwrap_err();
    assert!(
        err.to_string().contains(&link.display().to_string()),
        "{err}"
    );
}

#[test]
fn a_cache_past_its_freshness_or_of_another_event_is_made_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, env) = cache_in(&tmp);
    let cache = open(&env, json!({"session_id": "s1", "source": "compact"}));
    let only = Chunk { index: 0, total: 1 };
    write_first(&cache, only, &vec![vec!["a".to_owned()]]);
    // Another source or another conversation: another event, another cache.
    for other in [
        json!({"session_id": "s1", "source": "resume"}),
        json!({"session_id": "s2", "source": "compact"}),
    ] {
        let other = open(&env, other);
        assert_ne!(other.path(), cache.path());
        assert!(matches!(
            other.lookup(only, 100).unwrap(),
            Lookup::Missing(_)
        ));
    }
    // A second compaction of the same conversation, past FRESH: made again.
    let written = fs::File::options().write(true).open(cache.path()).unwrap();
    written
        .set_modified(std::time::SystemTime::now() - FRESH - Duration::from_secs(1))
        .unwrap();
    assert!(matches!(
        cache.lookup(only, 100).unwrap(),
        Lookup::Missing(_)
    ));
}

#[test]
fn the_last_registration_sweeps_what_is_stale_and_nothing_fresh() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, env) = cache_in(&tmp);
    let cache = open(&env, json!({"session_id": "s1", "source": "startup"}));
    let aged = |name: &str, age: Duration| {
        let path = dir.join(name);
        fs::write(&path, "x").unwrap();
        let file = fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(std::time::SystemTime::now() - age)
            .unwrap();
        path
    };
    let second = Duration::from_secs(1);
    let stale = aged("old_startup_1-2.slots", FRESH + second);
    let fresh = aged("new_startup_1-2.slots", FRESH.saturating_sub(second));
    let old_temp = aged("new_startup_1-2.slots.tmp.9.0", TEMP_LEFTOVER + second);
    let young_temp = aged("new_startup_1-2.slots.tmp.9.1", FRESH + second);
    let other = aged("notes.txt", TEMP_LEFTOVER + second);
    // The named pipe an earlier build's waiters slept on, however young.
    let pipe = dir.join(".wake-07");
    nix::unistd::mkfifo(&pipe, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let present = || [&stale, &fresh, &old_temp, &young_temp, &other, &pipe].map(|p| p.exists());
    // The first of three generates without sweeping; the middle one reads.
    let Lookup::Missing(writer) = cache.lookup(Chunk { index: 0, total: 3 }, 100).unwrap() else {
        panic!("nothing was cached yet")
    };
    assert_eq!(present(), [true; 6]);
    writer.write(&vec![vec!["a".to_owned()]; 3]).unwrap();
    assert!(matches!(
        cache.lookup(Chunk { index: 1, total: 3 }, 100).unwrap(),
        Lookup::Found(_)
    ));
    assert_eq!(present(), [true; 6]);
    // The last sweeps, and still finds the text just written.
    assert!(matches!(
        cache.lookup(Chunk { index: 2, total: 3 }, 100).unwrap(),
        Lookup::Found(_)
    ));
    assert_eq!(present(), [false, true, false, true, true, false]);
    assert!(cache.path().exists());
    // Alone, the one registration sweeps.
    let stale = aged("old_startup_1-2.slots", FRESH + second);
    let again = open(&env, json!({"session_id": "s2"}));
    assert!(matches!(
        again.lookup(Chunk { index: 0, total: 1 }, 100).unwrap(),
        Lookup::Missing(_)
    ));
    assert!(!stale.exists());
}

#[test]
fn the_writer_letting_go_wakes_the_waiting_registrations_written_or_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, env) = cache_in(&tmp);
    for written in [true, false] {
        let input = HookInput::from_value(json!({"session_id": format!("s-{written}")}));
        let cache = StartText::open(&env, &input, owner()).unwrap();
        let Lookup::Missing(writer) = cache.lookup(Chunk { index: 0, total: 3 }, 100).unwrap()
        else {
            panic!("nothing was cached yet")
        };
        let let_go = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let waiters: Vec<_> = (1..3)
            .map(|index| {
                let (env, input, let_go) = (env.clone(), input.clone(), let_go.clone());
                std::thread::spawn(move || {
                    let cache = StartText::open(&env, &input, owner()).unwrap();
                    let found = cache.lookup(Chunk { index, total: 3 }, 100).unwrap();
                    let woken_after = let_go.load(std::sync::atomic::Ordering::SeqCst);
                    (matches!(found, Lookup::Found(_)), woken_after)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let_go.store(true, std::sync::atomic::Ordering::SeqCst);
        if written {
            writer.write(&vec![vec!["a".to_owned()]; 3]).unwrap();
        } else {
            drop(writer);
        }
        // Woken with the lock free: each waiter reads the text, or, none written, takes the
        // making of it over in its turn.
        let answers: Vec<(bool, bool)> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert!(
            answers.iter().all(|&(_, after)| after),
            "a waiter went on before the generator let go: {answers:?}"
        );
        let found = answers.iter().filter(|&&(found, _)| found).count();
        assert_eq!(found, if written { 2 } else { 0 }, "written: {written}");
    }
}
