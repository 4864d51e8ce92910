//! Unit tests of `dehydrated`: the recovery found, and the states known to hold none.

use super::*;
use crate::primitives::env::{self, Env};
use crate::primitives::input::HookInput;
use serde_json::{Value, json};
use std::time::Duration;

struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    sessions: PathBuf,
    home: PathBuf,
}

impl Project {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        let sessions = root.join("sessions");
        fs::create_dir_all(root.join(".claude")).unwrap();
        fs::create_dir_all(sessions.join(session::INDEX_DIR)).unwrap();
        let home = tmp.path().join("home");
        fs::create_dir_all(&home).unwrap();
        Self {
            _tmp: tmp,
            root,
            sessions,
            home,
        }
    }

    fn ctx(&self) -> Context {
        let env = Env::from_pairs([
            (env::HOME, self.home.to_string_lossy().into_owned()),
            (env::CLAUDE_SUPERVISOR_PID, "4000001".to_owned()),
            (
                env::CLAUDE_SESSION_CACHE_DIR,
                self.home.to_string_lossy().into_owned(),
            ),
        ]);
        let input = HookInput::from_value(json!({"cwd": self.root}));
        Context::new(env, "test", &input, Duration::from_secs(2))
    }

    fn state(&self, name: &str, state: &Value) -> PathBuf {
        let dir = self.sessions.join(name);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(STATE_FILE);
        fs::write(&path, serde_json::to_string_pretty(state).unwrap()).unwrap();
        path
    }

    /// The session whose hand-over a scan finds.
    fn found(&self) -> Option<String> {
        find(&self.ctx()).map(|r| r.session)
    }

    /// The list of the states known to hold no hand-over.
    fn list(&self) -> PathBuf {
        self.sessions.join(session::INDEX_DIR).join(PLAIN_FILE)
    }

    fn plain(&self) -> Vec<String> {
        fs::read_to_string(self.list())
            .unwrap_or_default()
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
            .collect()
    }
}

fn dehydrated(pid: u32) -> Value {
    json!({"pid": pid, "skill": "implement", "currentPhase": "2: Planning",
           "dehydratedContext": {"summary": "where we were"}})
}

/// Sessions A and B of other agents, without a hand-over, after a scan that found none.
fn two_sessions_scanned() -> Project {
    let p = Project::new();
    p.state("2026_01_01_A", &json!({"pid": 4_000_002}));
    p.state("2026_01_02_B", &json!({"pid": 4_000_003}));
    assert!(p.found().is_none());
    p
}

#[test]
fn the_states_without_a_context_are_remembered_and_a_new_context_is_still_found() {
    let p = Project::new();
    p.state("2026_01_01_A", &json!({"pid": 4_000_002, "skill": "do"}));
    p.state("2026_01_02_B", &json!({"pid": 4_000_003, "skill": "do"}));
    p.state("2026_01_03_C", &json!({"pid": 4_000_004, "skill": "do"}));
    assert!(p.found().is_none());
    assert_eq!(p.plain(), ["2026_01_01_A", "2026_01_02_B", "2026_01_03_C"]);
    // The engine writes a hand-over into B: the changed file is read again and restored.
    p.state("2026_01_02_B", &dehydrated(4_000_003));
    let found = find(&p.ctx()).expect("the hand-over written after the first scan");
    assert_eq!(found.session, "2026_01_02_B");
    // Found before the end, the scan keeps what it knew of the rest.
    assert_eq!(p.plain(), ["2026_01_01_A", "2026_01_03_C"]);
}

#[test]
fn the_owners_own_session_is_read_every_time_and_never_remembered() {
    use std::os::unix::fs::MetadataExt;
    let p = Project::new();
    p.state("2026_01_01_A", &json!({"pid": 4_000_002}));
    let mine = p.state("2026_01_02_MINE", &json!({"pid": 4_000_001}));
    p.state("2026_01_03_C", &json!({"pid": 4_000_004}));
    let dir = mine.parent().unwrap();
    fs::write(
        session::cache_file(&p.ctx()),
        format!("{}\n", dir.display()),
    )
    .unwrap();
    assert!(p.found().is_none());
    assert_eq!(p.plain(), ["2026_01_01_A", "2026_01_03_C"]);
    // SessionStart rewrites the owner's state on every start: the list stays as it is.
    let list = p.list();
    let written = fs::metadata(&list).unwrap().ino();
    p.state(
        "2026_01_02_MINE",
        &json!({"pid": 4_000_001, "skill": "implement"}),
    );
    assert!(p.found().is_none());
    assert_eq!(
        fs::metadata(&list).unwrap().ino(),
        written,
        "the list is not rewritten"
    );
    // A hand-over in the owner's session is found all the same.
    p.state("2026_01_02_MINE", &dehydrated(4_000_001));
    assert_eq!(p.found().as_deref(), Some("2026_01_02_MINE"));
}

#[test]
fn a_list_out_of_name_order_costs_reads_but_never_hides_a_context() {
    let p = two_sessions_scanned();
    let list = p.list();
    let text = fs::read_to_string(&list).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    fs::write(&list, format!("{}\n{}\n", lines[1], lines[0])).unwrap();
    p.state("2026_01_01_A", &dehydrated(4_000_002));
    assert_eq!(p.found().as_deref(), Some("2026_01_01_A"));
    // A scan that finds none puts the list back in order.
    p.state("2026_01_01_A", &json!({"pid": 4_000_002}));
    assert!(p.found().is_none());
    assert_eq!(p.plain(), ["2026_01_01_A", "2026_01_02_B"]);
}

#[test]
fn a_remembered_state_is_not_read_again_while_its_file_is_unchanged() {
    let p = Project::new();
    let path = p.state("2026_01_01_A", &dehydrated(4_000_002));
    // The list says the file, as it is now, holds nothing: the scan believes it without reading.
    let listed = fs::File::open(&p.sessions).unwrap();
    let print = Print::of(&listed, b"2026_01_01_A/.state.json").unwrap();
    let list = p.list();
    fs::write(&list, format!("2026_01_01_A\t{print}\n")).unwrap();
    assert!(p.found().is_none(), "an unchanged file is not read");
    // Any write to the file changes its print: it is read, and its hand-over found.
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, format!("{text}\n")).unwrap();
    assert_eq!(p.found().as_deref(), Some("2026_01_01_A"));
    assert!(p.plain().is_empty());
}

#[test]
fn a_context_another_live_agent_owns_is_skipped_and_not_remembered() {
    let p = Project::new();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    p.state("2026_01_01_A", &dehydrated(child.id()));
    assert!(p.found().is_none(), "its owner is alive");
    assert!(
        p.plain().is_empty(),
        "its answer changes when the owner dies"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(p.found().as_deref(), Some("2026_01_01_A"));
}

#[test]
fn gone_sessions_and_a_damaged_list_are_forgotten() {
    let p = two_sessions_scanned();
    fs::remove_dir_all(p.sessions.join("2026_01_02_B")).unwrap();
    assert!(p.found().is_none());
    assert_eq!(p.plain(), ["2026_01_01_A"]);
    fs::write(
        p.list(),
        "garbage\nwithout tabs\n2026_01_01_A\tnot-the-print\n",
    )
    .unwrap();
    p.state("2026_01_01_A", &dehydrated(4_000_002));
    assert_eq!(p.found().as_deref(), Some("2026_01_01_A"));
}

#[test]
fn a_line_is_the_print_only_when_it_holds_the_prints_own_text() {
    let print = Print {
        dev: 2049,
        ino: u64::MAX,
        size: 346_112,
        times: [-1, 999_999_999, 1_767_225_600, 0],
    };
    let text = print.to_string();
    assert_eq!(
        text,
        "2049:18446744073709551615:346112:-1.999999999:1767225600.0"
    );
    // A device number beyond 64 bits, or below zero, is written whole.
    let wide = Print {
        dev: i128::from(u64::MAX) * 10 + 7,
        ..print
    };
    assert!(wide.to_string().starts_with("184467440737095516157:"));
    assert!(Print { dev: -5, ..print }.to_string().starts_with("-5:"));
    let padded = format!("0{text}");
    let short = text.trim_end_matches(".0").to_owned();
    let longer = format!("{text}:");
    for (listed, known) in [
        (text.as_str(), true),
        (padded.as_str(), false),
        (short.as_str(), false),
        (longer.as_str(), false),
        ("", false),
        ("not-the-print", false),
    ] {
        let list = format!("2026_01_01_A\t{listed}\n");
        let mut plain = Plain::new(&list);
        assert_eq!(
            plain.knows("2026_01_01_A", Some(print)),
            known,
            "{listed:?}"
        );
        assert_eq!(plain.changed, !known, "{listed:?}");
    }
    // A state that is a link or no file has no print, and is never known.
    let list = format!("2026_01_01_A\t{text}\n");
    assert!(!Plain::new(&list).knows("2026_01_01_A", None));
}

proptest::proptest! {
    /// Every number, and every power of ten and its neighbours, as `Display` writes it.
    #[test]
    fn a_number_is_written_as_display_writes_it(n: i64, power in 0u32..20, step in 0u64..3) {
        let mut out = Vec::new();
        for value in [i128::from(n), i128::from(10_u64.pow(power).saturating_add(step).saturating_sub(1))] {
            out.clear();
            write_decimal(&mut out, value < 0, u64::try_from(value.unsigned_abs()).unwrap());
            proptest::prop_assert_eq!(String::from_utf8(out.clone()).unwrap(), value.to_string());
        }
    }
}
