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
fn a_taker_excludes_appenders_until_it_empties_the_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("j");
    append(&path, &json!({"id": "a"}), soon()).unwrap();
    let taken = take(&path, soon()).unwrap();
    assert_eq!(taken.records, [json!({"id": "a"})]);
    let short = Instant::now() + Duration::from_millis(30);
    assert!(matches!(
        append(&path, &json!({"id": "b"}), short),
        Err(JournalError::Busy { .. })
    ));
    taken.empty().unwrap();
    append(&path, &json!({"id": "c"}), soon()).unwrap();
    assert_eq!(read(&path), [json!({"id": "c"})]);
    // Let go without emptying: the records stay.
    drop(take(&path, soon()).unwrap());
    assert_eq!(read(&path), [json!({"id": "c"})]);
    // Nothing there: nothing held.
    let none = take(&tmp.path().join("absent"), soon()).unwrap();
    assert!(none.records.is_empty());
    none.empty().unwrap();
    assert!(!tmp.path().join("absent").exists());
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
