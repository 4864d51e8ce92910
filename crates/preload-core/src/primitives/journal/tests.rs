//! Unit tests of `journal`.

use super::*;
use serde_json::json;

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(2)
}

#[test]
fn records_round_trip_and_a_torn_line_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("j");
    assert!(read(&path).is_empty());
    append(&path, &json!({"id": 1}), soon()).unwrap();
    // A record torn by a power cut, then more appends: only the torn one is lost.
    let mut raw = fs::OpenOptions::new().append(true).open(&path).unwrap();
    raw.write_all(b"\n{\"id\": 2, \"trunc").unwrap();
    append(&path, &json!({"id": 3}), soon()).unwrap();
    append(&path, &json!("not an object"), soon()).unwrap();
    let ids: Vec<Value> = read(&path).iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, [json!(1), json!(3)]);
}

#[test]
fn appends_during_a_taking_start_a_new_journal_and_a_left_taking_comes_first() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("j");
    append(&path, &json!({"id": "a"}), soon()).unwrap();
    let taken = take(&path, soon()).unwrap();
    assert_eq!(taken.records, [json!({"id": "a"})]);
    // Appends go on, without waiting, into a new journal; readers see both.
    let now = Instant::now();
    append(&path, &json!({"id": "b"}), now).unwrap();
    assert_eq!(read(&path), [json!({"id": "a"}), json!({"id": "b"})]);
    taken.empty().unwrap();
    assert_eq!(read(&path), [json!({"id": "b"})]);
    // A taker killed before removing what it took: the next taker gets the same records first,
    // alone; the journal's come with the taking after.
    let left = take(&path, soon()).unwrap();
    assert_eq!(left.records, [json!({"id": "b"})]);
    drop(left);
    append(&path, &json!({"id": "c"}), soon()).unwrap();
    let again = take(&path, soon()).unwrap();
    assert_eq!(again.records, [json!({"id": "b"})]);
    again.empty().unwrap();
    let last = take(&path, soon()).unwrap();
    assert_eq!(last.records, [json!({"id": "c"})]);
    last.empty().unwrap();
    assert!(read(&path).is_empty());
    assert!(!taken_path(&path).exists() && !path.exists());
    // Nothing there: nothing held.
    let none = take(&tmp.path().join("absent"), soon()).unwrap();
    assert!(none.records.is_empty());
    none.empty().unwrap();
}

#[test]
fn an_appender_that_opened_the_journal_before_a_taking_waits_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("j");
    append(&path, &json!({"id": "a"}), soon()).unwrap();
    // What an appender holds just before the rename: the journal open.
    let early = open(&path, false).unwrap();
    let taken = take(&path, soon()).unwrap();
    let short = Instant::now() + Duration::from_millis(30);
    assert!(matches!(
        lock(early, FlockArg::LockSharedNonblock, &path, short),
        Err(JournalError::Busy { .. })
    ));
    taken.empty().unwrap();
}

#[test]
fn a_full_journal_refuses_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("j");
    let big = "x".repeat(1_000);
    let mut written = 0;
    loop {
        match append(&path, &json!({"pad": big}), soon()) {
            Ok(()) => written += 1,
            Err(JournalError::Full { .. }) => break,
            Err(err) => panic!("{err}"),
        }
    }
    assert!(fs::metadata(&path).unwrap().len() <= MAX_BYTES);
    assert_eq!(read(&path).len(), written);
    take(&path, soon()).unwrap().empty().unwrap();
    append(&path, &json!({"id": 1}), soon()).unwrap();
    assert_eq!(read(&path).len(), 1);
}

#[test]
fn every_record_is_taken_exactly_once_under_concurrency() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("j");
    let writers = 8;
    let each = 200;
    let seen = std::thread::scope(|scope| {
        for w in 0..writers {
            let path = &path;
            scope.spawn(move || {
                for n in 0..each {
                    append(path, &json!({"w": w, "n": n}), soon()).unwrap();
                }
            });
        }
        let path = &path;
        let taker = scope.spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..300 {
                let taken = take(path, soon()).unwrap();
                seen.extend(taken.records.clone());
                taken.empty().unwrap();
                std::thread::sleep(Duration::from_micros(200));
            }
            seen
        });
        taker.join().unwrap()
    });
    let mut all = seen;
    all.extend(read(&path));
    let mut keys: Vec<(u64, u64)> = all
        .iter()
        .map(|r| (r["w"].as_u64().unwrap(), r["n"].as_u64().unwrap()))
        .collect();
    keys.sort_unstable();
    let before = keys.len();
    keys.dedup();
    assert_eq!(before, keys.len(), "a record taken twice");
    assert_eq!(keys.len(), writers * each, "a record lost");
}
