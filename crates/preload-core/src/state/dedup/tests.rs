//! Unit tests of `dedup`: path and inode hits, and the name index against a scan.

use super::*;
use serde_json::json;

fn state_with(files: &[&std::path::Path]) -> State {
    let mut s = State::default();
    let list: Vec<String> = files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    s.set("preloadedFiles", json!(list));
    s
}

#[test]
fn hardlink_and_directory_symlink_are_the_same_file() {
    let tmp = tempfile::tempdir().unwrap();
    let real_dir = tmp.path().join("engine/.directives");
    std::fs::create_dir_all(&real_dir).unwrap();
    let original = real_dir.join("COMMANDS.md");
    std::fs::write(&original, "c").unwrap();
    let hard = tmp.path().join("hard.md");
    std::fs::hard_link(&original, &hard).unwrap();
    let link_dir = tmp.path().join("linked");
    std::os::unix::fs::symlink(&real_dir, &link_dir).unwrap();

    let ids = FileIds::default();
    let mut s = state_with(&[&original]);
    let mut set = InContext::new(crate::state::IN_CONTEXT);
    let check = |set: &mut InContext, s: &State, p: &std::path::Path| {
        set.check(s, &p.to_string_lossy(), &ids)
    };
    assert_eq!(check(&mut set, &s, &original), Some(Hit::Path));
    assert_eq!(check(&mut set, &s, &hard), Some(Hit::Inode));
    assert_eq!(
        check(&mut set, &s, &link_dir.join("COMMANDS.md")),
        Some(Hit::Inode)
    );

    let other = tmp.path().join("other.md");
    std::fs::write(&other, "o").unwrap();
    assert_eq!(check(&mut set, &s, &other), None);
    set.append(&mut s, &other.to_string_lossy(), &ids);
    assert_eq!(check(&mut set, &s, &other), Some(Hit::Path));
}

#[test]
fn a_symlink_under_another_name_is_the_same_file() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("REAL.md");
    std::fs::write(&real, "r").unwrap();
    let alias = tmp.path().join("ALIAS.md");
    std::os::unix::fs::symlink(&real, &alias).unwrap();
    let s = state_with(&[&real]);
    let mut set = InContext::new(crate::state::IN_CONTEXT);
    let got = set.check(&s, &alias.to_string_lossy(), &FileIds::default());
    assert_eq!(got, Some(Hit::Inode));
}

#[test]
fn missing_files_never_match_by_inode() {
    let s = state_with(&[std::path::Path::new("/nope/a.md")]);
    let mut set = InContext::new(crate::state::IN_CONTEXT);
    assert_eq!(set.check(&s, "/nope/b.md", &FileIds::default()), None);
}

proptest::proptest! {
    /// The name comparison answers as "`path` ends with `/name`, or is `name`".
    #[test]
    fn names_compare_as_path_suffixes(path in "[/ab.é]{0,8}", name in "[/ab.é]{0,4}") {
        let expected = path
            .strip_suffix(name.as_str())
            .is_some_and(|head| head.is_empty() || head.ends_with('/'));
        proptest::prop_assert_eq!(has_name(&path, &name), expected);
    }
}

proptest::proptest! {
    /// A pass's checks, through the name index once it is built, answer what a scan of the
    /// array at that moment answers, while entries are appended and removed.
    #[test]
    fn checks_through_the_name_index_answer_what_a_scan_answers(
        ops in proptest::collection::vec((0u8..3, 0usize..48), 1..120),
        expected in 0usize..16,
    ) {
        let paths: Vec<String> = (0..48)
            .map(|i| format!("/p/d{}/N{}.md", i % 6, i % 8))
            .collect();
        let mut state = State::default();
        let filler: Vec<String> = (0..INDEXED_FROM)
            .map(|i| format!("/p/fill/F{i}.md"))
            .collect();
        state.set("preloadedFiles", json!(filler));
        let ids = FileIds::default();
        let mut pass = InContext::new(crate::state::IN_CONTEXT);
        pass.expect(expected);
        for (op, i) in ops {
            let path = &paths[i];
            match op {
                // Appended as a pass appends: after its check found it absent.
                0 => {
                    if pass.check(&state, path, &ids).is_none() {
                        pass.append(&mut state, path, &ids);
                    }
                }
                1 => {
                    state.remove_item("preloadedFiles", path);
                }
                _ => {
                    let scanned = InContext::new(crate::state::IN_CONTEXT).check(&state, path, &ids);
                    proptest::prop_assert_eq!(pass.check(&state, path, &ids), scanned);
                }
            }
        }
    }
}

#[test]
fn a_pass_that_expects_many_checks_indexes_at_its_first() {
    let filler: Vec<String> = (0..INDEXED_FROM).map(|i| format!("/p/F{i}.md")).collect();
    let mut state = State::default();
    state.set("preloadedFiles", json!(filler));
    let ids = FileIds::default();
    for (expected, indexed) in [(SCANS_BEFORE_INDEX, false), (SCANS_BEFORE_INDEX + 1, true)] {
        let mut pass = InContext::new(crate::state::IN_CONTEXT);
        pass.expect(expected);
        assert_eq!(pass.check(&state, "/p/F7.md", &ids), Some(Hit::Path));
        assert_eq!(pass.names.is_some(), indexed, "expecting {expected}");
    }
}
