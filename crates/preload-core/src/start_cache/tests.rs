use serde_json::json;

use super::*;

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
    let key = cache_key(&input);
    assert!(key.starts_with("a_.._b_c_clear_"), "{key}");
    assert!(
        key.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    );
    // The client process is part of the key: a run in another process never shares it.
    let client = process::nearest_non_shell_ancestor();
    assert!(key.contains(&format!("_{client}-")), "{key}");
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

#[test]
fn one_registration_writes_and_the_others_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    let env = Env::from_pairs([(env::PRELOAD_CACHE_DIR, dir.to_string_lossy().into_owned())]);
    let input = HookInput::from_value(json!({"session_id": "s1", "source": "startup"}));
    let cache = StartCache::open(&env, &input).unwrap();
    assert!(cache.path().starts_with(&dir));
    let deadline = Instant::now() + Duration::from_secs(5);
    let slots = vec![vec!["a".to_owned()], vec!["b".to_owned()]];
    match cache.lookup(2, 100, deadline).unwrap() {
        Lookup::Missing(writer) => writer.write(2, &slots).unwrap(),
        Lookup::Found(found) => panic!("nothing was cached yet: {found:?}"),
    }
    match cache.lookup(2, 100, deadline).unwrap() {
        Lookup::Found(found) => assert_eq!(found, slots),
        Lookup::Missing(_) => panic!("the cache was written"),
    }
    match cache.lookup(1, 100, deadline).unwrap() {
        Lookup::Found(found) => assert_eq!(found, vec![vec!["a".to_owned(), "b".to_owned()]]),
        Lookup::Missing(_) => panic!("the cache was written"),
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
    let err = StartCache::open(&env, &input).unwrap_err();
    assert!(
        err.to_string().contains(&link.display().to_string()),
        "{err}"
    );
}

#[test]
fn a_cache_past_its_freshness_or_of_another_event_is_made_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    let env = Env::from_pairs([(env::PRELOAD_CACHE_DIR, dir.to_string_lossy().into_owned())]);
    let deadline = Instant::now() + Duration::from_secs(5);
    let slots = vec![vec!["a".to_owned()]];
    let compact = HookInput::from_value(json!({"session_id": "s1", "source": "compact"}));
    let cache = StartCache::open(&env, &compact).unwrap();
    match cache.lookup(1, 100, deadline).unwrap() {
        Lookup::Missing(writer) => writer.write(1, &slots).unwrap(),
        Lookup::Found(found) => panic!("nothing was cached yet: {found:?}"),
    }
    // Another source or another conversation: another event, another cache.
    for other in [
        json!({"session_id": "s1", "source": "resume"}),
        json!({"session_id": "s2", "source": "compact"}),
    ] {
        let other = StartCache::open(&env, &HookInput::from_value(other)).unwrap();
        assert_ne!(other.path(), cache.path());
        assert!(matches!(
            other.lookup(1, 100, deadline).unwrap(),
            Lookup::Missing(_)
        ));
    }
    // A second compaction of the same conversation, past FRESH: made again.
    let written = fs::File::options().write(true).open(cache.path()).unwrap();
    written
        .set_modified(std::time::SystemTime::now() - FRESH - Duration::from_secs(1))
        .unwrap();
    assert!(matches!(
        cache.lookup(1, 100, deadline).unwrap(),
        Lookup::Missing(_)
    ));
}
